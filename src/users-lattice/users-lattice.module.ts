import { Module } from '@nestjs/common';
import { Broker } from '../cluster/broker';
import { ClusterContext } from '../cluster/cluster-context';
import { ClusterModule } from '../cluster/cluster.module';
import { ResumeModule } from '../resume/resume.module';
import { ConnectionsModule } from '../connections/connections.module';
import { ActivityModule } from '../activity/activity.module';
import { MemoryStatusSource } from './memory-status-source';
import { PresenceService } from './presence.service';
import { RedisStatusSource } from './redis-status-source';
import { StatusSource } from './status-source';
import { WatchLists } from './watch-lists';

/** The one place that says which {@link StatusSource} this gateway runs (STYLE rule 11). */
export function statusSourceFor(cluster: ClusterContext, lists: WatchLists, broker: Broker): StatusSource {
  if (cluster.shards === null) return new MemoryStatusSource(lists);
  return new RedisStatusSource(lists, broker, cluster.shards, cluster.names);
}

@Module({
  imports: [ConnectionsModule, ActivityModule, ClusterModule, ResumeModule],
  providers: [
    WatchLists,
    { provide: StatusSource, useFactory: statusSourceFor, inject: [ClusterContext, WatchLists, Broker] },
    PresenceService,
  ],
  exports: [PresenceService],
})
export class UsersLatticeModule {}
