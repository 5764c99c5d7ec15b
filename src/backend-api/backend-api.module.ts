import { MiddlewareConsumer, Module, NestModule, RequestMethod } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { LatticeModule } from '../lattice/lattice.module';
import { PubSubModule } from '../pubsub/pubsub.module';
import { UsersLatticeModule } from '../users-lattice/users-lattice.module';
import { ApiMetricsMiddleware } from './api-metrics.middleware';
import { BackendApiFilter } from './backend-api.filter';
import { BackendTokenMiddleware } from './backend-token.middleware';
import { PathShapeMiddleware } from './path-shape.middleware';
import { JsonBodyPipe, LatticeBodyPipe, NoBodyPipe, UserListPipe } from './body.pipes';
import { LatticesController } from './lattices.controller';
import { PublishController } from './publish.controller';
import { SubscriptionsController } from './subscriptions.controller';
import { UsersController } from './users.controller';

/** The backend API `/v1` on the internal listener (seed §4.2–4.3, SPEC §5). */
@Module({
  imports: [PubSubModule, LatticeModule, UsersLatticeModule],
  controllers: [SubscriptionsController, PublishController, LatticesController, UsersController],
  providers: [{ provide: APP_FILTER, useClass: BackendApiFilter }, BackendTokenMiddleware, NoBodyPipe, JsonBodyPipe, LatticeBodyPipe, UserListPipe],
})
export class BackendApiModule implements NestModule {
  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(ApiMetricsMiddleware, BackendTokenMiddleware, PathShapeMiddleware).forRoutes({ path: 'v1', method: RequestMethod.ALL }, { path: 'v1/*path', method: RequestMethod.ALL });
  }
}
