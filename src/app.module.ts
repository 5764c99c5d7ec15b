import { DynamicModule, Module } from '@nestjs/common';
import { BackendApiModule } from './backend-api/backend-api.module';
import { GatewayConfigModule } from './config/config.module';
import { GatewayConfig } from './config/gateway-config';
import { GatewayModule } from './gateway/gateway.module';
import { HealthModule } from './health/health.module';
import { LifecycleModule } from './lifecycle/lifecycle.module';
import { MetricsModule } from './metrics/metrics.module';
import { TracingModule } from './tracing/tracing.module';

/** The whole gateway; no providers of its own. */
@Module({})
export class AppModule {
  static forRoot(config: GatewayConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [
        GatewayConfigModule.forRoot(config),
        MetricsModule,
        TracingModule,
        GatewayModule,
        BackendApiModule,
        LifecycleModule,
        HealthModule,
      ],
    };
  }
}
