/**
 * Liveness of an open connection. The gateway pings a client that has been
 * silent for half a PING_INTERVAL and drops it after 3 silent intervals
 * (SPEC §1); the client mirrors that: it reconnects when it has heard nothing
 * for 3 intervals. Browsers never show WebSocket pings to scripts, so an
 * idle browser client would hear nothing at all: after one silent interval
 * the watchdog sends a probe the gateway answers itself (frames.ts
 * PROBE_METHOD), and any frame (or, with `ws` in Node, any ping) counts.
 */

/** What the watchdog should do now. */
export type WatchdogAction = 'none' | 'probe' | 'reconnect';

/** Silent intervals after which the connection is given up (the gateway's own limit). */
export const SILENT_INTERVALS = 3;

/**
 * Decide from the times (ms) of the last incoming traffic and of the last
 * probe (null: none since the connection opened). A probe is sent once per
 * silent interval; `isProbing` false never probes.
 */
export function watchdogAction(nowMs: number, lastTrafficAt: number, lastProbeAt: number | null, pingIntervalMs: number, isProbing: boolean): WatchdogAction {
  const silentMs = nowMs - lastTrafficAt;
  if (silentMs >= SILENT_INTERVALS * pingIntervalMs) return 'reconnect';
  if (!isProbing || silentMs < pingIntervalMs) return 'none';
  const probedThisSilence = lastProbeAt !== null && lastProbeAt >= lastTrafficAt && nowMs - lastProbeAt < pingIntervalMs;
  return probedThisSilence ? 'none' : 'probe';
}

/** Runs {@link watchdogAction} every half interval while started. */
export class Watchdog {
  private timer: ReturnType<typeof setInterval> | null = null;
  private lastTrafficAt = 0;
  private lastProbeAt: number | null = null;

  constructor(
    private readonly pingIntervalMs: number,
    private readonly isProbing: boolean,
    private readonly probe: () => void,
    private readonly onSilent: () => void,
  ) {}

  start(): void {
    this.stop();
    this.lastTrafficAt = Date.now();
    this.lastProbeAt = null;
    this.timer = setInterval(() => this.check(), Math.max(1, this.pingIntervalMs / 2));
  }

  /** Something arrived: a frame, or a ping where the platform shows pings. */
  seen(): void {
    this.lastTrafficAt = Date.now();
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }

  private check(): void {
    const now = Date.now();
    switch (watchdogAction(now, this.lastTrafficAt, this.lastProbeAt, this.pingIntervalMs, this.isProbing)) {
      case 'probe':
        this.lastProbeAt = now;
        return this.probe();
      case 'reconnect':
        this.stop();
        return this.onSilent();
      case 'none':
        return;
    }
  }
}
