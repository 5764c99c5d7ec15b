import { Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import { ActivityService } from '../activity/activity.service';
import { RefreshOutcome, refreshDelayMs, retryDelayMs } from '../auth/auth-lifetime';
import { AuthService } from '../auth/auth.service';
import { GatewayConfig } from '../config/gateway-config';
import { Connection } from '../connections/connection';
import { ConnectionRegistry } from '../connections/connection-registry';
import { GatewayMetrics } from '../metrics/gateway-metrics';
import { REASON_EXPIRED, backendErrorCloseCode } from '../protocol/close-codes';
import { encodeFatalError, encodeHello } from '../protocol/frames';
import { Identity } from '../protocol/identity';
import { ResumableSessionsService } from '../resume/resumable-sessions.service';
import { DeadlineQueue } from '../scheduling/deadline-queue';

/** One connection's authorization lifetime (SPEC §14); its end is `Connection.authEndsAt` (kept in its session record). */
interface Lifetime {
  /** Epoch ms of the queued refresh (or retry); entries of the queue at another time are stale. */
  dueAt: number;
  /** Failed refreshes since the last answer that restarted the lifetime. */
  failures: number;
  isRefreshing: boolean;
}

/** Stale queue entries below this many are left to come due (a pass over the queue costs more). */
const MIN_COMPACTED_ENTRIES = 1024;
/** How often a connection busy with a resume's replay is looked at again. */
const BUSY_RETRY_MS = 100;
/** The hello meta of a refreshed identity (SPEC §14). */
const REFRESHED_META = '{"refreshed":true}';

/**
 * SPEC §14: authorizations that expire. Each connection with a lifetime has
 * one entry in a deadline queue (one timer for all, no timer per connection):
 * its refresh at 90% ±5% of the lifetime, or its next retry. A refresh that
 * comes back ok restarts the lifetime; a changed identity replaces the
 * connection's; a refusal ends the session (4000+S, `expired`); failures are
 * retried until the lifetime's end plus AUTHORIZATION_GRACE, then 4500.
 * Connections without a lifetime cost nothing here.
 */
@Injectable()
export class AuthLifetimeService implements OnModuleDestroy {
  private readonly logger = new Logger(AuthLifetimeService.name);
  private readonly lifetimes = new Map<Connection, Lifetime>();
  private readonly deadlines = new DeadlineQueue<Connection>();
  private timer: NodeJS.Timeout | null = null;
  private timerAt: number | null = null;
  private readonly graceMs: number;
  private readonly results;
  private readonly fatalSent;
  private readonly helloSent;

  constructor(
    config: GatewayConfig,
    private readonly registry: ConnectionRegistry,
    private readonly auth: AuthService,
    private readonly resumables: ResumableSessionsService,
    private readonly activity: ActivityService,
    metrics: GatewayMetrics,
  ) {
    this.graceMs = config.authLifetime.graceMs;
    this.results = {
      ok: metrics.authRefreshes.labels('ok'),
      changed: metrics.authRefreshes.labels('changed'),
      refused: metrics.authRefreshes.labels('refused'),
      failed: metrics.authRefreshes.labels('failed'),
    };
    this.fatalSent = metrics.framesSent.labels('fatal_error');
    this.helloSent = metrics.framesSent.labels('hello');
    registry.onRemove((connection) => this.forget(connection));
  }

  /**
   * An authorization of `connection` starts its lifetime now (0: unlimited,
   * nothing to do). Called before its session record is first written, which
   * then carries the lifetime's end.
   */
  started(connection: Connection, lifetimeMs: number): void {
    if (lifetimeMs === 0) {
      connection.authEndsAt = 0;
      return this.forget(connection);
    }
    const now = Date.now();
    connection.authEndsAt = now + lifetimeMs;
    const lifetime: Lifetime = { dueAt: 0, failures: 0, isRefreshing: false };
    this.lifetimes.set(connection, lifetime);
    this.schedule(connection, lifetime, now + refreshDelayMs(lifetimeMs, Math.random()));
  }

  /**
   * Cluster mode (SPEC §14): this node took over a session whose record says
   * when its authorization ends. It is refreshed at 90% ±5% of what remains;
   * one that ended already is refreshed by the resume first ({@link hasEnded}).
   */
  adopted(connection: Connection): void {
    if (connection.authEndsAt === 0) return;
    const lifetime: Lifetime = { dueAt: 0, failures: 0, isRefreshing: false };
    this.lifetimes.set(connection, lifetime);
    const now = Date.now();
    const remainingMs = connection.authEndsAt - now;
    if (remainingMs > 0) this.schedule(connection, lifetime, now + refreshDelayMs(remainingMs, Math.random()));
  }

  /** SPEC §14: whether `connection`'s lifetime has ended with no refresh under way (a resume refreshes first). */
  hasEnded(connection: Connection): boolean {
    const lifetime = this.lifetimes.get(connection);
    return lifetime !== undefined && !lifetime.isRefreshing && connection.authEndsAt <= Date.now();
  }

  /**
   * SPEC §14: a session whose lifetime ended while detached is refreshed
   * before its resumed hello (no cookie: the refresh is about the user).
   * Resolves true when it may be resumed: refreshed (the lifetime starts
   * again), or failing but within the grace (retried as for a live
   * connection). False when it ended: refused, past the grace, or removed
   * meanwhile; the resume is then a normal connect.
   */
  async refreshBeforeResume(connection: Connection): Promise<boolean> {
    const lifetime = this.lifetimes.get(connection)!;
    lifetime.isRefreshing = true;
    const outcome = await this.auth.refresh(connection);
    lifetime.isRefreshing = false;
    if (this.lifetimes.get(connection) !== lifetime || !this.registry.holds(connection)) return false;
    this.results[outcome.kind].inc();
    switch (outcome.kind) {
      case 'changed':
        // The resumed hello carries the new identity: no separate frame.
        this.changeIdentity(connection, outcome.identityJson);
        this.restart(connection, outcome.lifetimeMs);
        return true;
      case 'ok':
        this.restart(connection, outcome.lifetimeMs);
        return true;
      case 'refused':
        this.endDetached(connection, outcome.status);
        return false;
      case 'failed':
        lifetime.failures++;
        if (Date.now() >= connection.authEndsAt + this.graceMs) {
          this.endDetached(connection, 500);
          return false;
        }
        this.schedule(connection, lifetime, Date.now() + retryDelayMs(lifetime.failures));
        return true;
      default: {
        const unknown: never = outcome;
        return unknown;
      }
    }
  }

  /**
   * SPEC §14: a session took a new socket. A resume never extends its
   * lifetime; a refresh (or retry) that fell due while it was detached goes now.
   */
  resumed(connection: Connection): void {
    const lifetime = this.lifetimes.get(connection);
    // Not yet due: its entry is still queued.
    const now = Date.now();
    if (lifetime === undefined || lifetime.isRefreshing || lifetime.dueAt > now) return;
    this.schedule(connection, lifetime, now);
  }

  onModuleDestroy(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }

  /**
   * The connection has no lifetime any more. Its queued entry goes stale; once
   * stale entries outnumber live ones they are dropped in one pass, so a
   * closed connection with a long lifetime is not kept until its refresh time.
   */
  private forget(connection: Connection): void {
    if (!this.lifetimes.delete(connection)) return;
    if (this.deadlines.size <= 2 * this.lifetimes.size + MIN_COMPACTED_ENTRIES) return;
    this.deadlines.retain((entry) => this.lifetimes.get(entry.key)?.dueAt === entry.atMs);
  }

  private schedule(connection: Connection, lifetime: Lifetime, atMs: number): void {
    lifetime.dueAt = atMs;
    this.deadlines.push(atMs, connection);
    if (this.timerAt === null || atMs < this.timerAt) this.arm();
  }

  private arm(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    const at = this.deadlines.peekAt();
    this.timerAt = at;
    this.timer = at === null ? null : setTimeout(() => this.onTimer(), Math.max(0, at - Date.now()));
    this.timer?.unref();
  }

  private onTimer(): void {
    this.timer = null;
    this.timerAt = null;
    for (const entry of this.deadlines.popDue(Date.now())) this.onDue(entry.key, entry.atMs);
    if (this.timerAt === null) this.arm();
  }

  private onDue(connection: Connection, atMs: number): void {
    const lifetime = this.lifetimes.get(connection);
    // Stale: the connection is gone, its lifetime restarted, or its retry moved.
    if (lifetime === undefined || lifetime.dueAt !== atMs || lifetime.isRefreshing) return;
    // SPEC §14: a detached session is not refreshed (nobody uses it); its resume looks at the lifetime.
    if (connection.state === 'detached') return;
    if (connection.state !== 'ready') return this.schedule(connection, lifetime, Date.now() + BUSY_RETRY_MS);
    if (lifetime.failures > 0 && Date.now() >= connection.authEndsAt + this.graceMs) {
      return this.expire(connection, 500, 'null');
    }
    lifetime.isRefreshing = true;
    void this.auth.refresh(connection).then((outcome) => this.apply(connection, lifetime, outcome));
  }

  private apply(connection: Connection, lifetime: Lifetime, outcome: RefreshOutcome): void {
    lifetime.isRefreshing = false;
    // Gone meanwhile (closed, revoked, or its lifetime replaced): the answer is ignored.
    if (this.lifetimes.get(connection) !== lifetime || connection.state === 'closed') return;
    this.results[outcome.kind].inc();
    switch (outcome.kind) {
      case 'changed':
        this.changeIdentity(connection, outcome.identityJson);
        // SPEC §14: resumable clients learn the new identity; legacy ones get no extra frame.
        if (connection.isResumable && connection.send(encodeHello(outcome.identityJson, REFRESHED_META)))
          this.helloSent.inc();
        return this.restart(connection, outcome.lifetimeMs);
      case 'ok':
        return this.restart(connection, outcome.lifetimeMs);
      case 'refused':
        return this.expire(connection, outcome.status, outcome.dataJson);
      case 'failed': {
        lifetime.failures++;
        const retryAt = Date.now() + retryDelayMs(lifetime.failures);
        return this.schedule(connection, lifetime, Math.min(retryAt, connection.authEndsAt + this.graceMs));
      }
      default: {
        const unknown: never = outcome;
        return unknown;
      }
    }
  }

  /** SPEC §14: later upstream requests carry the new identity, the user's `session_inactive` (§8) too. */
  private changeIdentity(connection: Connection, identityJson: string): void {
    connection.identity = new Identity(connection.identity!.userId, identityJson);
    this.activity.refreshed(connection);
  }

  /**
   * A refresh restarted the lifetime. Cluster mode: the session's record gets
   * the new end and identity (written as at its start), so a takeover carries them.
   */
  private restart(connection: Connection, lifetimeMs: number): void {
    this.started(connection, lifetimeMs);
    this.resumables.started(connection)?.catch(() => undefined);
  }

  /** A detached session's refresh was refused: it ends (no socket to tell), and its token with it. */
  private endDetached(connection: Connection, status: number): void {
    this.forget(connection);
    if (Logger.isLevelEnabled('log'))
      this.logger.log({ msg: 'authorization expired', connection_id: connection.id, status });
    this.registry.remove(connection);
  }

  /**
   * SPEC §14: fatal_error with S and D, close 4000+S `expired`; the session
   * ends and cannot be resumed. Cluster mode: as a DELETE does (§12.6), the
   * end is recorded in Redis first, where every takeover checks it, so no
   * node resumes the session once its client has heard of the end.
   */
  private expire(connection: Connection, status: number, dataJson: string): void {
    this.forget(connection);
    if (Logger.isLevelEnabled('log'))
      this.logger.log({ msg: 'authorization expired', connection_id: connection.id, status });
    if (!connection.isResumable) return this.end(connection, status, dataJson);
    this.resumables.markRevoked(connection.id);
    // Not recorded (Redis unreachable): the session still ends here; its record expires unrefreshed.
    const end = (): void => this.end(connection, status, dataJson);
    this.resumables.userSessions.revoke(connection.id).then(end, end);
  }

  private end(connection: Connection, status: number, dataJson: string): void {
    connection.close(backendErrorCloseCode(status), REASON_EXPIRED, encodeFatalError('http_error', dataJson, status));
    this.fatalSent.inc();
    this.registry.remove(connection);
  }
}
