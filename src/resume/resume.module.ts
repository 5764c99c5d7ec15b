import { Module } from '@nestjs/common';
import { ClusterModule } from '../cluster/cluster.module';
import { ConnectionsModule } from '../connections/connections.module';
import { ResumableSessionsService } from './resumable-sessions.service';

/** Resumable sessions (SPEC §12): tokens and the detach window. */
@Module({ imports: [ConnectionsModule, ClusterModule], providers: [ResumableSessionsService], exports: [ResumableSessionsService] })
export class ResumeModule {}
