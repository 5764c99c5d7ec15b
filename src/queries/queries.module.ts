import { Module } from '@nestjs/common';
import { ClusterContext } from '../cluster/cluster-context';
import { ClusterModule } from '../cluster/cluster.module';
import { ConnectionsModule } from '../connections/connections.module';
import { LatticeModule } from '../lattice/lattice.module';
import { PubSubModule } from '../pubsub/pubsub.module';
import { ActivityModule } from '../activity/activity.module';
import { ResumeModule } from '../resume/resume.module';
import { UsersLatticeModule } from '../users-lattice/users-lattice.module';
import { LocalNodeQueries, NodeQueries } from './node-queries';
import { QueriesService } from './queries.service';
import { RedisNodeQueries } from './redis-node-queries';

/** SPEC §15.2: the GET queries' answers, cluster-wide; in memory on one node, on Redis in a cluster (said once, here). */
@Module({
  imports: [
    ClusterModule,
    ConnectionsModule,
    PubSubModule,
    LatticeModule,
    UsersLatticeModule,
    ActivityModule,
    ResumeModule,
  ],
  providers: [{ provide: NodeQueries, inject: [ClusterContext], useFactory: openNodeQueries }, QueriesService],
  exports: [QueriesService],
})
export class QueriesModule {}

async function openNodeQueries(cluster: ClusterContext): Promise<NodeQueries> {
  if (cluster.shards === null) return new LocalNodeQueries(cluster.nodeId, true);
  const queries = new RedisNodeQueries(cluster.shards, cluster.names, cluster.nodeId);
  await queries.start();
  return queries;
}
