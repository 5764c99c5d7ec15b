/**
 * Liveness of an open connection. The gateway pings a client that has been
 * silent for half a PING_INTERVAL and drops it after 3 silent intervals
 * (SPEC §1); the client mirrors that: it reconnects when it has heard nothing
 * for 3 intervals. Browsers never show WebSocket pings to scripts, so an
 * idle browser client would hear nothing at all: after one silent interval
 * the watchdog sends a probe the gateway answers itself (frames.ts
 * PROBE_METHOD), and any frame (or, with `ws` in Node, any ping) counts.
 * The clock is read on each check, not assumed: see watchdogAction.
 */

/** What the watchdog should do now. */
export type WatchdogAction = 'none' | 'probe' | 'reconnect';

/** Silent intervals after which the connection is given up (the gateway's own limit). */
export const SILENT_INTERVALS = 3;

/**
 * Decide from the time (ms) of the last incoming traffic and the time the
 * pending probe was sent (null: no probe awaits an answer; any traffic
 * answers it). Without probing: reconnect after 3 silent intervals. With
 * probing: one probe after a silent interval; reconnect once the silence has
 * lasted 3 intervals and the probe has gone 2 intervals unanswered. The second
 * condition matters where timers can be late (a browser throttles the timers
 * of a background tab): a check that wakes up after a long gap probes first
 * instead of giving up a healthy connection.
 */
export function watchdogAction(
  nowMs: number,
  lastTrafficAt: number,
  probeSentAt: number | null,
  pingIntervalMs: number,
  isProbing: boolean,
): WatchdogAction {
  const silentMs = nowMs - lastTrafficAt;
  const giveUpMs = SILENT_INTERVALS * pingIntervalMs;
  if (!isProbing) return silentMs >= giveUpMs ? 'reconnect' : 'none';
  if (probeSentAt === null) return silentMs >= pingIntervalMs ? 'probe' : 'none';
  return silentMs >= giveUpMs && nowMs - probeSentAt >= giveUpMs - pingIntervalMs ? 'reconnect' : 'none';
}

/** Runs {@link watchdogAction} every half interval while started. */
export class Watchdog {
  private timer: ReturnType<typeof setInterval> | null = null;
  private lastTrafficAt = 0;
  /** When the probe awaiting an answer was sent; null when none is. */
  private probeSentAt: number | null = null;

  constructor(
    private readonly pingIntervalMs: number,
    private readonly isProbing: boolean,
    private readonly probe: () => void,
    private readonly onSilent: () => void,
  ) {}

  start(): void {
    this.stop();
    this.lastTrafficAt = Date.now();
    this.probeSentAt = null;
    this.timer = setInterval(() => this.check(), Math.max(1, this.pingIntervalMs / 2));
  }

  /** Something arrived: a frame, or a ping where the platform shows pings. */
  seen(): void {
    this.lastTrafficAt = Date.now();
    this.probeSentAt = null;
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }

  private check(): void {
    const now = Date.now();
    switch (watchdogAction(now, this.lastTrafficAt, this.probeSentAt, this.pingIntervalMs, this.isProbing)) {
      case 'probe':
        this.probeSentAt = now;
        return this.probe();
      case 'reconnect':
        this.stop();
        return this.onSilent();
      case 'none':
        return;
    }
  }
}
