import { DynamicModule, Global, Module } from '@nestjs/common';
import { ConfigModule } from '@nestjs/config';
import { GatewayConfig } from './gateway-config';

/**
 * Global: provides the typed GatewayConfig token. @nestjs/config only carries
 * the already validated object (STYLE B7); nothing reads process.env here.
 */
@Global()
@Module({})
export class GatewayConfigModule {
  static forRoot(config: GatewayConfig): DynamicModule {
    return {
      module: GatewayConfigModule,
      imports: [
        ConfigModule.forRoot({ ignoreEnvFile: true, skipProcessEnv: true, load: [() => ({ gateway: config })] }),
      ],
      providers: [{ provide: GatewayConfig, useValue: config }],
      exports: [GatewayConfig],
    };
  }
}
