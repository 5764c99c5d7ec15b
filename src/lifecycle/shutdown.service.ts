import { Injectable, Logger } from '@nestjs/common';
import { GatewayConfig } from '../config/gateway-config';
import { ConnectionRegistry } from '../connections/connection-registry';
import {
  CLOSE_GOING_AWAY,
  CLOSE_SERVICE_RESTART,
  REASON_SERVICE_RESTART,
  REASON_SHUTDOWN,
} from '../protocol/close-codes';
import { UpstreamClient } from '../upstream/upstream.client';

/** Runs when draining starts (e.g. the public listener stops accepting). */
export type DrainListener = () => Promise<void> | void;

const IN_FLIGHT_POLL_MS = 20;
const CLOSE_HANDSHAKE_MS = 1000;

/**
 * SPEC §10 shutdown: readiness → 503 first, stop accepting, let in-flight
 * upstream requests finish up to SHUTDOWN_GRACE, then close clients with 1001
 * (resumable sessions with 1012, SPEC §12.5).
 */
@Injectable()
export class ShutdownService {
  private readonly logger = new Logger(ShutdownService.name);
  private readonly drainListeners: DrainListener[] = [];
  private draining = false;

  constructor(
    private readonly config: GatewayConfig,
    private readonly registry: ConnectionRegistry,
    private readonly upstream: UpstreamClient,
  ) {}

  get isDraining(): boolean {
    return this.draining;
  }

  onDrain(listener: DrainListener): void {
    this.drainListeners.push(listener);
  }

  /** The whole drain; resolves when every client has been asked to close. */
  async drain(): Promise<void> {
    if (this.draining) return;
    this.draining = true;
    this.logger.log({ msg: 'draining', connections: this.registry.size, in_flight: this.upstream.inFlight });
    await Promise.all(this.drainListeners.map((listener) => listener()));
    await this.awaitInFlight(Date.now() + this.config.shutdownGraceMs);
    for (const connection of [...this.registry.all()]) {
      if (connection.state === 'detached') continue;
      // SPEC §12.5: a resumable session is detached and its client told to come back at once.
      if (connection.isResumable) connection.close(CLOSE_SERVICE_RESTART, REASON_SERVICE_RESTART);
      else connection.close(CLOSE_GOING_AWAY, REASON_SHUTDOWN);
    }
  }

  /** After drain: give clients a moment to answer the close, then cut the rest. */
  async awaitClientsGone(): Promise<void> {
    const deadlineAt = Date.now() + CLOSE_HANDSHAKE_MS;
    while (this.registry.liveCount > 0 && Date.now() < deadlineAt) {
      await new Promise((resolve) => setTimeout(resolve, IN_FLIGHT_POLL_MS));
    }
    for (const connection of [...this.registry.all()])
      if (connection.state !== 'detached') connection.socket.terminate();
  }

  private async awaitInFlight(deadlineAt: number): Promise<void> {
    while (this.upstream.inFlight > 0 && Date.now() < deadlineAt) {
      await new Promise((resolve) => setTimeout(resolve, IN_FLIGHT_POLL_MS));
    }
  }
}
