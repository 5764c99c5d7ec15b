import { Module } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { ClusterModule } from '../cluster/cluster.module';
import { ConnectionsModule } from '../connections/connections.module';
import { LatticeModule } from '../lattice/lattice.module';
import { PubSubModule } from '../pubsub/pubsub.module';
import { ResumeModule } from '../resume/resume.module';
import { UsersLatticeModule } from '../users-lattice/users-lattice.module';
import { BackendApiEntryMiddleware } from './backend-api-entry.middleware';
import { BackendApiFilter } from './backend-api.filter';
import { BatchController } from './batch.controller';
import { BatchService } from './batch.service';
import { BatchBodyPipe, JsonBodyPipe, LatticeBodyPipe, NoBodyPipe, UserListPipe } from './body.pipes';
import { DisconnectController } from './disconnect.controller';
import { DisconnectService } from './disconnect.service';
import { LatticesController } from './lattices.controller';
import { PublishController } from './publish.controller';
import { QueriesModule } from '../queries/queries.module';
import { QueriesController } from './queries.controller';
import { SubscriptionsController } from './subscriptions.controller';
import { UsersController } from './users.controller';

/** The backend API `/v1` on the internal listener (seed §4.2–4.3, SPEC §5). */
@Module({
  imports: [
    ConnectionsModule,
    ClusterModule,
    PubSubModule,
    LatticeModule,
    UsersLatticeModule,
    ResumeModule,
    QueriesModule,
  ],
  controllers: [
    SubscriptionsController,
    PublishController,
    LatticesController,
    UsersController,
    DisconnectController,
    BatchController,
    QueriesController,
  ],
  providers: [
    { provide: APP_FILTER, useClass: BackendApiFilter },
    BackendApiEntryMiddleware,
    BatchService,
    DisconnectService,
    NoBodyPipe,
    JsonBodyPipe,
    LatticeBodyPipe,
    UserListPipe,
    BatchBodyPipe,
  ],
})
export class BackendApiModule {}
