import { Global, Module } from '@nestjs/common';
import { GatewayMetrics } from './gateway-metrics';
import { MetricsController } from './metrics.controller';

/** Global: every module records into the one GatewayMetrics of this app. */
@Global()
@Module({
  providers: [{ provide: GatewayMetrics, useFactory: () => new GatewayMetrics() }],
  controllers: [MetricsController],
  exports: [GatewayMetrics],
})
export class MetricsModule {}
