import { Injectable } from '@nestjs/common';
import { HealthIndicatorResult, HealthIndicatorService } from '@nestjs/terminus';
import { ReadinessRegistry } from './readiness.registry';
import { ShutdownService } from './shutdown.service';

/** Readiness: down as soon as draining starts (SPEC §10). */
@Injectable()
export class DrainingHealth {
  constructor(
    private readonly indicators: HealthIndicatorService,
    private readonly shutdown: ShutdownService,
    readiness: ReadinessRegistry,
  ) {
    readiness.add(() => this.check());
  }

  check(): HealthIndicatorResult {
    const indicator = this.indicators.check('accepting');
    return this.shutdown.isDraining ? indicator.down({ reason: 'draining' }) : indicator.up();
  }
}
