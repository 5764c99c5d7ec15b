import { Module } from '@nestjs/common';
import { ClusterContext } from '../cluster/cluster-context';
import { ClusterModule } from '../cluster/cluster.module';
import { ConnectionRegistry } from '../connections/connection-registry';
import { ConnectionsModule } from '../connections/connections.module';
import { MemoryResumeRate } from './memory-resume-rate';
import { RedisResumeRate } from './redis-resume-rate';
import { ResumeRate } from './resume-rate';
import { ResumableSessionsService } from './resumable-sessions.service';
import { SessionParts } from './session-parts';

/** Resumable sessions (SPEC §12): tokens, the detach window, the bound on resumes, and the parts of a session's record the features register. */
@Module({
  imports: [ConnectionsModule, ClusterModule],
  providers: [
    ResumableSessionsService,
    SessionParts,
    { provide: ResumeRate, inject: [ClusterContext, ConnectionRegistry], useFactory: resumeRateFor },
  ],
  exports: [ResumableSessionsService, ResumeRate, SessionParts],
})
export class ResumeModule {}

/** In memory on one node, in Redis in cluster mode. */
function resumeRateFor(cluster: ClusterContext, registry: ConnectionRegistry): ResumeRate {
  return cluster.link === null ? new MemoryResumeRate(registry) : new RedisResumeRate(cluster.link, cluster.names);
}
