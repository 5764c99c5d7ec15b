import { Injectable } from '@nestjs/common';
import { HealthIndicatorResult, HealthIndicatorService } from '@nestjs/terminus';
import { ClusterContext } from './cluster-context';

/**
 * Readiness detail of cluster mode (SPEC §10–11): `cluster.redis` is `up` or
 * `down` (with REDIS_SHARDS, `shards` lists each shard's, SPEC §13.4; on a
 * Redis Cluster, `primaries` names each primary's, SPEC §13.5), and
 * the indicator itself stays up: every node shares the same Redis, so
 * failing readiness on it would take the whole service out of the balancer.
 */
@Injectable()
export class RedisHealth {
  constructor(
    private readonly indicators: HealthIndicatorService,
    private readonly cluster: ClusterContext,
  ) {}

  check(): HealthIndicatorResult {
    const shards = this.cluster.shards;
    if (shards === null) return {};
    const state = (isUp: boolean) => (isUp ? 'up' : 'down');
    const data = shards.data.includes(shards.control) ? {} : { shards: shards.data.map((link) => state(link.isUp)) };
    const primaries = shards.control.primaries;
    return this.indicators.check('cluster').up({
      redis: state(shards.control.isUp),
      ...data,
      ...(primaries !== null && { primaries }),
      node_id: this.cluster.nodeId,
    });
  }
}
