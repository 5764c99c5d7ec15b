import { Module } from '@nestjs/common';
import { ClusterModule } from '../cluster/cluster.module';
import { ConnectionsModule } from '../connections/connections.module';
import { SessionsModule } from '../sessions/sessions.module';
import { PresenceService } from './presence.service';

@Module({
  imports: [ConnectionsModule, SessionsModule, ClusterModule],
  providers: [PresenceService],
  exports: [PresenceService],
})
export class UsersLatticeModule {}
