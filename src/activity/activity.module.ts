import { Module } from '@nestjs/common';
import { ClusterContext } from '../cluster/cluster-context';
import { ClusterModule } from '../cluster/cluster.module';
import { ConnectionRegistry } from '../connections/connection-registry';
import { ConnectionsModule } from '../connections/connections.module';
import { LifecycleModule } from '../lifecycle/lifecycle.module';
import { ShutdownService } from '../lifecycle/shutdown.service';
import { ResumeModule } from '../resume/resume.module';
import { SessionStore } from '../resume/session-store';
import { UpstreamModule } from '../upstream/upstream.module';
import { ActivityNotices } from './activity-notices';
import { ActivityService } from './activity.service';
import { MemoryActivity } from './memory-activity';
import { RedisActivity } from './redis-activity';
import { UserActivity } from './user-activity';

/** The one place that says where activity lives (STYLE rule 11); cluster mode wires node deaths and the drain. */
export function userActivityFor(
  cluster: ClusterContext,
  registry: ConnectionRegistry,
  shutdown: ShutdownService,
  notices: ActivityNotices,
  sessions: SessionStore,
): UserActivity {
  if (cluster.shards === null) return new MemoryActivity(notices, registry);
  const countOf = (userId: string) => [...registry.ofUser(userId)].length;
  const activity = new RedisActivity(cluster.shards, cluster.names, cluster.nodeId, countOf, notices, sessions);
  cluster.onNodeGone((nodeId) => activity.removeNode(nodeId));
  // SPEC §11 "Drain": presence goes before the clients do, so watchers see it at once.
  shutdown.onDrain(() => activity.stop());
  return activity;
}

@Module({
  imports: [ConnectionsModule, UpstreamModule, ClusterModule, LifecycleModule, ResumeModule],
  providers: [
    ActivityNotices,
    {
      provide: UserActivity,
      inject: [ClusterContext, ConnectionRegistry, ShutdownService, ActivityNotices, SessionStore],
      useFactory: userActivityFor,
    },
    ActivityService,
  ],
  exports: [ActivityService],
})
export class ActivityModule {}
