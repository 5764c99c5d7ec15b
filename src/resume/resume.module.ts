import { Module } from '@nestjs/common';
import { ConnectionsModule } from '../connections/connections.module';
import { ResumableSessionsService } from './resumable-sessions.service';

/** Resumable sessions (SPEC §12): tokens and the detach window. */
@Module({ imports: [ConnectionsModule], providers: [ResumableSessionsService], exports: [ResumableSessionsService] })
export class ResumeModule {}
