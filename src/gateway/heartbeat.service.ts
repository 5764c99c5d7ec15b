import { Injectable, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { GatewayConfig } from '../config/gateway-config';
import { ConnectionRegistry } from '../connections/connection-registry';

/** Missed intervals after which a silent connection is dropped (SPEC §1 PING_INTERVAL). */
const SILENT_INTERVALS = 3;

/** Pings every connection each PING_INTERVAL; drops one silent for 3 intervals. */
@Injectable()
export class HeartbeatService implements OnApplicationBootstrap, OnModuleDestroy {
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly config: GatewayConfig,
    private readonly registry: ConnectionRegistry,
  ) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => this.tick(), this.config.pingIntervalMs);
    this.timer.unref();
  }

  onModuleDestroy(): void {
    if (this.timer !== null) clearInterval(this.timer);
  }

  private tick(): void {
    const silentSince = Date.now() - SILENT_INTERVALS * this.config.pingIntervalMs;
    for (const connection of this.registry.all()) {
      const socket = connection.socket;
      if (connection.lastSeenAt < silentSince) socket.terminate();
      else if (socket.readyState === socket.OPEN) socket.ping();
    }
  }
}
