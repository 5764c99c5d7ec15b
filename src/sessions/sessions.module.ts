import { Module } from '@nestjs/common';
import { ClusterModule } from '../cluster/cluster.module';
import { ConnectionsModule } from '../connections/connections.module';
import { LifecycleModule } from '../lifecycle/lifecycle.module';
import { UpstreamModule } from '../upstream/upstream.module';
import { SessionsService } from './sessions.service';

@Module({ imports: [ConnectionsModule, UpstreamModule, ClusterModule, LifecycleModule], providers: [SessionsService], exports: [SessionsService] })
export class SessionsModule {}
