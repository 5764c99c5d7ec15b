import { Module } from '@nestjs/common';
import { Broker } from '../cluster/broker';
import { ClusterContext } from '../cluster/cluster-context';
import { ClusterModule } from '../cluster/cluster.module';
import { ResumeModule } from '../resume/resume.module';
import { GatewayConfig } from '../config/gateway-config';
import { ConnectionRegistry } from '../connections/connection-registry';
import { ConnectionsModule } from '../connections/connections.module';
import { GatewayMetrics } from '../metrics/gateway-metrics';
import { LatticeLog } from './lattice-log';
import { LatticeService } from './lattice.service';
import { LatticeSync } from './lattice-sync';
import { LocalLattices } from './local-lattices';
import { MemoryLatticeSync } from './memory-lattice-sync';
import { RedisLatticeSync } from './redis-lattice-sync';

/** The one place that says which {@link LatticeSync} this gateway runs (STYLE rule 11). */
export function latticeSyncFor(
  config: GatewayConfig,
  cluster: ClusterContext,
  local: LocalLattices,
  registry: ConnectionRegistry,
  broker: Broker,
  metrics: GatewayMetrics,
): LatticeSync {
  if (cluster.shards === null) return new MemoryLatticeSync(local);
  const log = new LatticeLog(cluster.shards, cluster.names, cluster.nodeId, config.latticeRetentionMs);
  return new RedisLatticeSync(log, local, registry, cluster.shards, broker, metrics, config.latticeRetentionMs);
}

@Module({
  imports: [ConnectionsModule, ClusterModule, ResumeModule],
  providers: [
    LocalLattices,
    {
      provide: LatticeSync,
      useFactory: latticeSyncFor,
      inject: [GatewayConfig, ClusterContext, LocalLattices, ConnectionRegistry, Broker, GatewayMetrics],
    },
    LatticeService,
  ],
  exports: [LatticeService],
})
export class LatticeModule {}
