import { Logger } from '@nestjs/common';

/** What the probe does to the link it watches. */
export interface ProbedSubscriber {
  /** Whether the link is up now (a probe only runs while it is). */
  readonly isUp: () => boolean;
  /** Publish the probe on a channel the subscriber listens to (its handler ignores it). */
  readonly publishProbe: () => Promise<unknown>;
  /** Drop the subscriber's connection; it reconnects and resubscribes everything. */
  readonly reconnect: () => void;
  /** Run at every tick, also while down (Sentinel: both connections on the current primary). */
  readonly onTick: () => void;
}

/**
 * CLUSTER.md "Redis outage": a subscriber can look connected after a failover
 * and receive nothing. When it has heard nothing for `idleMs`, the probe
 * publishes on a channel it listens to; no message within `timeoutMs` →
 * reconnect the subscriber.
 */
export class SilenceProbe {
  private readonly logger = new Logger('RedisLink');
  /** Epoch ms of the last message the subscriber received. */
  private lastHeardAt = Date.now();
  private probeSentAt: number | null = null;
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly subscriber: ProbedSubscriber) {}

  /** The subscriber received a message (any: the probe's own or another). */
  heard(): void {
    this.lastHeardAt = Date.now();
    this.probeSentAt = null;
  }

  start(idleMs: number, timeoutMs: number): void {
    this.timer = setInterval(() => this.tick(idleMs, timeoutMs), Math.max(10, Math.min(idleMs, timeoutMs) / 2));
    this.timer.unref();
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }

  private tick(idleMs: number, timeoutMs: number): void {
    this.subscriber.onTick();
    if (!this.subscriber.isUp()) return;
    const now = Date.now();
    if (this.probeSentAt !== null) {
      if (now - this.probeSentAt < timeoutMs) return;
      this.logger.warn({ msg: 'redis subscriber silent: reconnecting it', silent_ms: now - this.lastHeardAt });
      this.probeSentAt = null;
      this.lastHeardAt = now;
      this.subscriber.reconnect();
      return;
    }
    if (now - this.lastHeardAt < idleMs) return;
    this.probeSentAt = now;
    this.subscriber.publishProbe().catch(() => undefined);
  }
}
