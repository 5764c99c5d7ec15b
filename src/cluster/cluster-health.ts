import { HealthIndicatorResult, HealthIndicatorService } from '@nestjs/terminus';
import { RedisShards } from './redis-shards';

/**
 * Readiness detail of cluster mode (SPEC §10–11), chosen once in the
 * cluster module's factory (STYLE rule 11): {@link NoClusterHealth} on a
 * single node (nothing to report), {@link RedisHealth} in cluster mode.
 */
export abstract class ClusterHealth {
  abstract check(): HealthIndicatorResult;
}

/** A single node: no Redis, nothing in the readiness body. */
export class NoClusterHealth extends ClusterHealth {
  check(): HealthIndicatorResult {
    return {};
  }
}

/**
 * Cluster mode: `cluster.redis` is `up` or `down` (with REDIS_SHARDS,
 * `shards` lists each shard's, SPEC §13.4; on a Redis Cluster, `primaries`
 * names each primary's, SPEC §13.5), and the indicator itself stays up:
 * every node shares the same Redis, so failing readiness on it would take
 * the whole service out of the balancer.
 */
export class RedisHealth extends ClusterHealth {
  constructor(
    private readonly indicators: HealthIndicatorService,
    private readonly shards: RedisShards,
    private readonly nodeId: string,
  ) {
    super();
  }

  check(): HealthIndicatorResult {
    const shards = this.shards;
    const state = (isUp: boolean) => (isUp ? 'up' : 'down');
    const data = shards.data.includes(shards.control) ? {} : { shards: shards.data.map((link) => state(link.isUp)) };
    const primaries = shards.control.primaries;
    return this.indicators.check('cluster').up({
      redis: state(shards.control.isUp),
      ...data,
      ...(primaries !== null && { primaries }),
      node_id: this.nodeId,
    });
  }
}
