import { Global, Module } from '@nestjs/common';
import { GatewayTracer } from './gateway-tracer';

/**
 * Global like metrics and logging: tracing is observability at the seams of
 * several modules (gateway, auth, upstream, backend API), none of which owns it.
 */
@Global()
@Module({
  providers: [GatewayTracer],
  exports: [GatewayTracer],
})
export class TracingModule {}
