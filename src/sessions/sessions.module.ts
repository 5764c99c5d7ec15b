import { Module } from '@nestjs/common';
import { ClusterContext } from '../cluster/cluster-context';
import { ClusterModule } from '../cluster/cluster.module';
import { ConnectionRegistry } from '../connections/connection-registry';
import { ConnectionsModule } from '../connections/connections.module';
import { LifecycleModule } from '../lifecycle/lifecycle.module';
import { ShutdownService } from '../lifecycle/shutdown.service';
import { UpstreamModule } from '../upstream/upstream.module';
import { ClusterSessions } from './cluster-sessions';
import { SessionsService } from './sessions.service';

/** Cluster mode: the Redis side of sessions, wired to node deaths and the drain; null on a single node. */
function clusterSessionsOf(
  cluster: ClusterContext,
  registry: ConnectionRegistry,
  shutdown: ShutdownService,
): ClusterSessions | null {
  if (cluster.link === null) return null;
  const sessions = new ClusterSessions(
    cluster.link,
    cluster.names,
    cluster.nodeId,
    (userId) => [...registry.ofUser(userId)].length,
  );
  cluster.onNodeGone((nodeId) => sessions.removeNode(nodeId));
  // SPEC §11 "Drain": presence goes before the clients do, so watchers see it at once.
  shutdown.onDrain(() => sessions.stop());
  return sessions;
}

@Module({
  imports: [ConnectionsModule, UpstreamModule, ClusterModule, LifecycleModule],
  providers: [
    SessionsService,
    {
      provide: ClusterSessions,
      inject: [ClusterContext, ConnectionRegistry, ShutdownService],
      useFactory: clusterSessionsOf,
    },
  ],
  exports: [SessionsService],
})
export class SessionsModule {}
