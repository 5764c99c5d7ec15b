import { Injectable } from '@nestjs/common';
import { HealthIndicatorFunction } from '@nestjs/terminus';

/**
 * The readiness checks of this node. Each module that owns a resource adds its
 * indicator (terminus pattern: indicators live with their owner, SPEC §10).
 */
@Injectable()
export class ReadinessRegistry {
  private readonly checks: HealthIndicatorFunction[] = [];

  add(check: HealthIndicatorFunction): void {
    this.checks.push(check);
  }

  all(): HealthIndicatorFunction[] {
    return [...this.checks];
  }
}
