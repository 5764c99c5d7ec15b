import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { ConnectionsModule } from '../connections/connections.module';
import { UpstreamModule } from '../upstream/upstream.module';
import { DrainingHealth } from './draining.health';
import { ReadinessRegistry } from './readiness.registry';
import { ShutdownService } from './shutdown.service';

/** Draining and the shutdown sequence. */
@Module({
  imports: [ConnectionsModule, UpstreamModule, TerminusModule],
  providers: [ShutdownService, DrainingHealth, ReadinessRegistry],
  exports: [ShutdownService, ReadinessRegistry],
})
export class LifecycleModule {}
