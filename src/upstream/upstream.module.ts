import { Module } from '@nestjs/common';
import { UpstreamClient } from './upstream.client';
import { UpstreamRoutes } from './upstream-routes';

/** HTTP to backends: routing tables and the keep-alive client (SPEC §1, §4.2). */
@Module({
  providers: [UpstreamClient, UpstreamRoutes],
  exports: [UpstreamClient, UpstreamRoutes],
})
export class UpstreamModule {}
