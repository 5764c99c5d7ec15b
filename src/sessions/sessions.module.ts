import { Module } from '@nestjs/common';
import { ConnectionsModule } from '../connections/connections.module';
import { UpstreamModule } from '../upstream/upstream.module';
import { SessionsService } from './sessions.service';

@Module({ imports: [ConnectionsModule, UpstreamModule], providers: [SessionsService], exports: [SessionsService] })
export class SessionsModule {}
