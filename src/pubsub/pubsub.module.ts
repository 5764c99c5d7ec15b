import { Module } from '@nestjs/common';
import { ClusterModule } from '../cluster/cluster.module';
import { ConnectionsModule } from '../connections/connections.module';
import { PubSubService } from './pubsub.service';

@Module({ imports: [ConnectionsModule, ClusterModule], providers: [PubSubService], exports: [PubSubService] })
export class PubSubModule {}
