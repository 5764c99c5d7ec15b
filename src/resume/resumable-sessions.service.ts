import { Injectable, OnModuleDestroy } from '@nestjs/common';
import { GatewayConfig } from '../config/gateway-config';
import { Connection } from '../connections/connection';
import { ConnectionRegistry } from '../connections/connection-registry';
import { GatewayMetrics } from '../metrics/gateway-metrics';
import { isDetachedByClose } from './detach-rule';
import { isSameDigest, newSessionToken, tokenDigest } from './session-token';

/** What a resume token leads to: the session, or why there is none (the `gateway_resumes_total` result). */
export type TokenLookup = { readonly ok: true; readonly connection: Connection } | { readonly ok: false; readonly result: 'expired' | 'invalid' };

/** Digests of ended sessions' tokens are remembered this long (to count `expired`), at most this many. */
const MAX_ENDED_REMEMBERED = 100_000;

/**
 * SPEC §12 resumable sessions on this node: the single-use token of each
 * session (kept as a digest), the detach window, and the end of a session
 * whose window passed. The session itself is the Connection, which stays in
 * the registry while detached, so its id, user, subscriptions and presence
 * stay as they are. (Not §8's per-user activity session: see sessions/.)
 */
@Injectable()
export class ResumableSessionsService implements OnModuleDestroy {
  /** Token digest → session. */
  private readonly byDigest = new Map<string, Connection>();
  private readonly digestOf = new Map<Connection, string>();
  private readonly windowTimers = new Map<Connection, NodeJS.Timeout>();
  /** Digest → ms at which it is forgotten, oldest first. */
  private readonly ended = new Map<string, number>();
  private readonly results;

  constructor(
    private readonly config: GatewayConfig,
    private readonly registry: ConnectionRegistry,
    metrics: GatewayMetrics,
  ) {
    this.results = { resumed: metrics.resumes.labels('resumed'), expired: metrics.resumes.labels('expired'), invalid: metrics.resumes.labels('invalid') };
    registry.onRemove((connection) => this.forget(connection));
  }

  /** RESUME_WINDOW in whole seconds, as the hello's `window` gives it. */
  get windowSeconds(): number {
    return Math.round(this.config.resume.windowMs / 1000);
  }

  /** A new single-use token for `connection`; the previous one is void (SPEC §12.1). */
  issueToken(connection: Connection): string {
    const token = newSessionToken();
    const digest = tokenDigest(token);
    const previous = this.digestOf.get(connection);
    if (previous !== undefined) this.byDigest.delete(previous);
    this.byDigest.set(digest, connection);
    this.digestOf.set(connection, digest);
    return token;
  }

  /** The session a token resumes, on the handler it was opened on; counts a failure. */
  lookUp(token: string, handlerName: string): TokenLookup {
    const digest = tokenDigest(token);
    const connection = this.byDigest.get(digest);
    if (connection !== undefined && isSameDigest(this.digestOf.get(connection)!, digest) && connection.handler.name === handlerName) {
      return { ok: true, connection };
    }
    const result = this.ended.has(digest) ? 'expired' : 'invalid';
    this.countFailure(result);
    return { ok: false, result };
  }

  /** A resume request whose offer could not be read. */
  countFailure(result: 'expired' | 'invalid'): void {
    this.results[result].inc();
  }

  /** The session takes its new socket: its window stops. */
  resumed(connection: Connection): void {
    const timer = this.windowTimers.get(connection);
    if (timer !== undefined) clearTimeout(timer);
    this.windowTimers.delete(connection);
    this.results.resumed.inc();
  }

  /**
   * The socket of `connection` closed. A resumable session that lost it
   * without the client's goodbye is detached for RESUME_WINDOW (SPEC §12.2);
   * everything else leaves the registry at once.
   */
  socketClosed(connection: Connection, peerCloseCode: number): void {
    const isDetached =
      this.digestOf.has(connection) && connection.identity !== null && this.registry.holds(connection) && isDetachedByClose(connection.closedWith, peerCloseCode);
    if (!isDetached) return this.registry.remove(connection);
    this.registry.detach(connection);
    const timer = setTimeout(() => this.registry.remove(connection), this.config.resume.windowMs);
    timer.unref();
    this.windowTimers.set(connection, timer);
  }

  onModuleDestroy(): void {
    for (const timer of this.windowTimers.values()) clearTimeout(timer);
  }

  private forget(connection: Connection): void {
    const digest = this.digestOf.get(connection);
    if (digest === undefined) return;
    this.digestOf.delete(connection);
    this.byDigest.delete(digest);
    const timer = this.windowTimers.get(connection);
    if (timer !== undefined) clearTimeout(timer);
    this.windowTimers.delete(connection);
    this.remember(digest);
  }

  private remember(digest: string): void {
    const now = Date.now();
    for (const [old, forgetAt] of this.ended) {
      if (forgetAt > now && this.ended.size < MAX_ENDED_REMEMBERED) break;
      this.ended.delete(old);
    }
    this.ended.set(digest, now + Math.max(this.config.resume.windowMs, 60_000));
  }
}
