import { Injectable } from '@nestjs/common';
import { HealthIndicatorResult, HealthIndicatorService } from '@nestjs/terminus';
import { ClusterContext } from './cluster-context';

/**
 * Readiness detail of cluster mode (SPEC §10–11): `cluster.redis` is `up` or
 * `down`, and the indicator itself stays up: every node shares one Redis, so
 * failing readiness on it would take the whole service out of the balancer.
 */
@Injectable()
export class RedisHealth {
  constructor(
    private readonly indicators: HealthIndicatorService,
    private readonly cluster: ClusterContext,
  ) {}

  check(): HealthIndicatorResult {
    const link = this.cluster.link;
    if (link === null) return {};
    return this.indicators.check('cluster').up({ redis: link.isUp ? 'up' : 'down', node_id: this.cluster.nodeId });
  }
}
