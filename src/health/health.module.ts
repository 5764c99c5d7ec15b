import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { ClusterModule } from '../cluster/cluster.module';
import { LifecycleModule } from '../lifecycle/lifecycle.module';
import { HealthController } from './health.controller';

/** Composes readiness indicators owned by other modules. */
@Module({
  imports: [TerminusModule.forRoot({ logger: false }), LifecycleModule, ClusterModule],
  controllers: [HealthController],
})
export class HealthModule {}
