import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
import { ConnectionsModule } from '../connections/connections.module';
import { LatticeModule } from '../lattice/lattice.module';
import { ActivityModule } from '../activity/activity.module';
import { UsersLatticeModule } from '../users-lattice/users-lattice.module';
import { UpstreamModule } from '../upstream/upstream.module';
import { PubSubModule } from '../pubsub/pubsub.module';
import { ResumeModule } from '../resume/resume.module';
import { SessionResumeService } from './session-resume.service';
import { AuthLifetimeService } from './auth-lifetime.service';
import { ClientFramesService } from './client-frames.service';
import { HeartbeatService } from './heartbeat.service';
import { HelloSequenceService } from './hello-sequence.service';
import { HelloService } from './hello.service';
import { LatticeGateway } from './lattice.gateway';
import { PublicListener } from './public-listener';
import { HandshakeRefusals } from './handshake-refusals';

/** The public edge: handshake, WebSocket lifecycle, client frames. */
@Module({
  imports: [
    AuthModule,
    UpstreamModule,
    ConnectionsModule,
    ActivityModule,
    PubSubModule,
    LatticeModule,
    UsersLatticeModule,
    ResumeModule,
  ],
  providers: [
    PublicListener,
    HandshakeRefusals,
    LatticeGateway,
    ClientFramesService,
    HelloService,
    HelloSequenceService,
    HeartbeatService,
    SessionResumeService,
    AuthLifetimeService,
  ],
  exports: [PublicListener],
})
export class GatewayModule {}
