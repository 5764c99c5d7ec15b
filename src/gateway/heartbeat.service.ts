import { Injectable, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { GatewayConfig } from '../config/gateway-config';
import { Connection } from '../connections/connection';
import { ConnectionRegistry } from '../connections/connection-registry';

/** Missed intervals after which a silent connection is dropped (SPEC §1 PING_INTERVAL). */
const SILENT_INTERVALS = 3;
/**
 * Ticks per interval. Each tick visits about 1/SLICES of the connections, so
 * a node with 100k connections never sends all its pings in one burst (which
 * would stall every other client for the time it takes).
 */
const SLICES = 10;

/**
 * Once per PING_INTERVAL, visits every connection: drops one silent for 3
 * intervals, pings one silent for half an interval. A client heard from
 * more recently (a frame or a pong) is known to be there and is not pinged.
 */
@Injectable()
export class HeartbeatService implements OnApplicationBootstrap, OnModuleDestroy {
  private timer: NodeJS.Timeout | null = null;
  /** The current round over the registry; null between rounds. */
  private round: Iterator<Connection> | null = null;
  private roundStartedAt = 0;

  constructor(
    private readonly config: GatewayConfig,
    private readonly registry: ConnectionRegistry,
  ) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => this.tick(), this.config.pingIntervalMs / SLICES);
    this.timer.unref();
  }

  onModuleDestroy(): void {
    if (this.timer !== null) clearInterval(this.timer);
  }

  private tick(): void {
    const now = Date.now();
    const interval = this.config.pingIntervalMs;
    if (this.round === null) {
      if (now - this.roundStartedAt < interval) return;
      // A Map iterator stays valid while entries come and go: it skips removed ones.
      this.round = this.registry.all();
      this.roundStartedAt = now;
    }
    const dropBefore = now - SILENT_INTERVALS * interval;
    const pingBefore = now - interval / 2;
    // At least one step per tick: a live Map iterator keeps every hash table the Map
    // outgrew since its last step, with the removed connections in them. A round
    // that stood still (no connections left) held them until the next connection.
    for (let budget = Math.max(1, Math.ceil(this.registry.size / SLICES)); budget > 0; budget--) {
      const next = this.round.next();
      if (next.done === true) {
        this.round = null;
        return;
      }
      const { socket, lastSeenAt, state } = next.value;
      if (state === 'detached') continue; // no socket to ping (SPEC §12.2)
      if (lastSeenAt < dropBefore) socket.terminate();
      else if (lastSeenAt < pingBefore && socket.readyState === socket.OPEN) socket.ping();
    }
  }
}
