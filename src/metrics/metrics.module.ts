import { Global, Module } from '@nestjs/common';
import { GatewayConfig } from '../config/gateway-config';
import { GatewayMetrics } from './gateway-metrics';
import { MetricsController } from './metrics.controller';

/** Global: every module records into the one GatewayMetrics of this app. */
@Global()
@Module({
  providers: [{ provide: GatewayMetrics, useFactory: createMetrics, inject: [GatewayConfig] }],
  controllers: [MetricsController],
  exports: [GatewayMetrics],
})
export class MetricsModule {}

function createMetrics(config: GatewayConfig): GatewayMetrics {
  const metrics = new GatewayMetrics(config.redisUrl !== null);
  metrics.connectionsLimit.set(config.limits.maxConnections);
  return metrics;
}
