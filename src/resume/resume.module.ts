import { Module } from '@nestjs/common';
import { ClusterContext } from '../cluster/cluster-context';
import { ClusterModule } from '../cluster/cluster.module';
import { ConnectionRegistry } from '../connections/connection-registry';
import { ConnectionsModule } from '../connections/connections.module';
import { GatewayConfig } from '../config/gateway-config';
import { Broker } from '../cluster/broker';
import { MemoryResumeRate } from './memory-resume-rate';
import { RedisResumeRate } from './redis-resume-rate';
import { RedisSessionStore } from './redis-session-store';
import { RedisUserSessions } from './redis-user-sessions';
import { ResumeRate } from './resume-rate';
import { ResumableSessionsService } from './resumable-sessions.service';
import { SessionParts } from './session-parts';
import { isResumeOffered } from './resume-settings';
import { LocalSessionStore, SessionStore } from './session-store';
import { MemoryUserSessions, UserSessions } from './user-sessions';

/** Resumable sessions (SPEC §12): tokens, the detach window, the bound on resumes, and the parts of a session's record the features register. */
@Module({
  imports: [ConnectionsModule, ClusterModule],
  providers: [
    ResumableSessionsService,
    SessionParts,
    { provide: ResumeRate, inject: [ClusterContext, ConnectionRegistry], useFactory: resumeRateFor },
    { provide: UserSessions, inject: [ClusterContext, GatewayConfig], useFactory: userSessionsFor },
    {
      provide: SessionStore,
      inject: [ClusterContext, GatewayConfig, ConnectionRegistry, Broker, SessionParts],
      useFactory: sessionStoreFor,
    },
  ],
  exports: [ResumableSessionsService, ResumeRate, SessionParts, UserSessions, SessionStore],
})
export class ResumeModule {}

/** In memory on one node, in Redis in cluster mode. */
function resumeRateFor(cluster: ClusterContext, registry: ConnectionRegistry): ResumeRate {
  return cluster.shards === null ? new MemoryResumeRate(registry) : new RedisResumeRate(cluster.shards, cluster.names);
}

/** Recorded in Redis in cluster mode with resumable sessions; otherwise only this node's registry knows them. */
function userSessionsFor(cluster: ClusterContext, config: GatewayConfig): UserSessions {
  return cluster.shards !== null && isResumeOffered(config)
    ? new RedisUserSessions(cluster.shards, cluster.names)
    : new MemoryUserSessions();
}

/** Sessions' records in Redis in cluster mode with resumable sessions (a token resumes on any node); else in memory only. */
function sessionStoreFor(
  cluster: ClusterContext,
  config: GatewayConfig,
  registry: ConnectionRegistry,
  broker: Broker,
  parts: SessionParts,
): SessionStore {
  return cluster.shards !== null && isResumeOffered(config)
    ? new RedisSessionStore(cluster.shards, cluster.names, config.resume.windowMs, registry, broker, parts)
    : new LocalSessionStore();
}
