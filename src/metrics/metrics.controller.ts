import { Controller, Get, Header } from '@nestjs/common';
import { GatewayMetrics } from './gateway-metrics';

/** GET /metrics on the internal listener (the public listener never routes here). */
@Controller('metrics')
export class MetricsController {
  constructor(private readonly metrics: GatewayMetrics) {}

  @Get()
  @Header('Content-Type', 'text/plain; version=0.0.4; charset=utf-8')
  scrape(): Promise<string> {
    return this.metrics.registry.metrics();
  }
}
