import { Controller, Get } from '@nestjs/common';
import { HealthCheck, HealthCheckResult, HealthCheckService } from '@nestjs/terminus';
import { ClusterHealth } from '../cluster/cluster-health';
import { ReadinessRegistry } from '../lifecycle/readiness.registry';

/** GET /health/live and /health/ready (both listeners, SPEC §10). */
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly readiness: ReadinessRegistry,
    private readonly cluster: ClusterHealth,
  ) {}

  @Get('live')
  @HealthCheck()
  live(): Promise<HealthCheckResult> {
    return this.health.check([]);
  }

  @Get('ready')
  @HealthCheck()
  ready(): Promise<HealthCheckResult> {
    // Cluster mode: Redis is reported in the body and never fails readiness (SPEC §11).
    return this.health.check([...this.readiness.all(), () => this.cluster.check()]);
  }
}
