import { Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import { Moved } from '../cluster/whereabouts';
import { SessionParts } from './session-parts';
import { UserSessions } from './user-sessions';
import { GatewayConfig } from '../config/gateway-config';
import { Connection } from '../connections/connection';
import { ConnectionRegistry } from '../connections/connection-registry';
import { GatewayMetrics } from '../metrics/gateway-metrics';
import {
  CLOSE_DISCONNECTED,
  CLOSE_SESSION_RESUMED,
  REASON_DISCONNECTED,
  REASON_SERVICE_RESTART,
  REASON_SESSION_RESUMED,
} from '../protocol/close-codes';
import { isDetachedByClose } from './detach-rule';
import { DetachedPerUser } from './detached-per-user';
import { HeldSession, OrphanedSession, SessionRecord, SessionStart, SessionSubscriptions } from './session-record';
import { SessionHost, SessionStore, Takeover } from './session-store';
import { isSameDigest, newSessionToken, tokenDigest } from './session-token';
import { ResumeRate } from './resume-rate';

/** What a resume token leads to: the session, or why there is none (the `gateway_resumes_total` result). */
export type TokenLookup =
  | { readonly ok: true; readonly connection: Connection }
  | { readonly ok: false; readonly result: 'expired' | 'invalid' };

/** Digests of ended sessions' tokens are remembered this long (to count `expired`), at most this many. */
const MAX_ENDED_REMEMBERED = 100_000;
/**
 * Cluster mode: connection ids a DELETE reached here, remembered this long
 * (at most this many): a takeover whose reply from Redis was still on its way
 * then cannot bring the session back here (SPEC §12.6).
 */
const REVOKED_MEMORY_MS = 60_000;
const MAX_REVOKED_REMEMBERED = 100_000;

/**
 * SPEC §12 resumable sessions on this node: the single-use token of each
 * session (kept as a digest), the detach window, and the end of a session
 * whose window passed. The session itself is the Connection, which stays in
 * the registry while detached, so its id, user, subscriptions and presence
 * stay as they are. (Not §8's per-user activity: see activity/.)
 */
@Injectable()
export class ResumableSessionsService implements OnModuleDestroy, SessionHost {
  /** Token digest → session. */
  private readonly byDigest = new Map<string, Connection>();
  private readonly digestOf = new Map<Connection, string>();
  private readonly windowTimers = new Map<Connection, NodeJS.Timeout>();
  /** Detached sessions' window ends (epoch ms), for their records. */
  private readonly windowEnds = new Map<Connection, number>();
  /** SPEC §12.2: RESUME_MAX_DETACHED_PER_USER. */
  private readonly detachedPerUser: DetachedPerUser<Connection>;
  /** Digest → ms at which it is forgotten, oldest first. */
  private readonly ended = new Map<string, number>();
  /** Connection id → ms at which it is forgotten, oldest first (cluster mode). */
  private readonly revoked = new Map<string, number>();
  private readonly results;
  private readonly logger = new Logger(ResumableSessionsService.name);
  constructor(
    private readonly config: GatewayConfig,
    private readonly registry: ConnectionRegistry,
    metrics: GatewayMetrics,
    private readonly resumeRate: ResumeRate,
    private readonly parts: SessionParts,
    /** Where sessions live beyond this node's memory: nowhere on one node, their records in Redis in cluster mode. */
    private readonly store: SessionStore,
    /** Each user's sessions beyond this node's memory (Redis in cluster mode), for revocation and endpoint 8. */
    readonly userSessions: UserSessions,
  ) {
    this.detachedPerUser = new DetachedPerUser(config.resume.maxDetachedPerUser);
    this.results = {
      resumed: metrics.resumes.labels('resumed'),
      expired: metrics.resumes.labels('expired'),
      invalid: metrics.resumes.labels('invalid'),
    };
    registry.onRemove((connection) => this.forget(connection));
    store.attach(this);
  }

  /**
   * A resumable session starts (before its hello): in cluster mode its record
   * is written, so it can be resumed on any node from its first hello on.
   */
  started(connection: Connection): Promise<void> | undefined {
    const start = this.startOf(connection);
    return start === null ? undefined : this.store.started(start, this.parts.read(connection));
  }

  private startOf(connection: Connection): SessionStart | null {
    const digest = this.digestOf.get(connection);
    if (digest === undefined || connection.identity === null) return null;
    const identity = connection.identity;
    const windowEndAt = connection.state === 'detached' ? (this.windowEnds.get(connection) ?? 0) : 0;
    return {
      connectionId: connection.id,
      digest,
      userId: identity.userId,
      authJson: identity.json,
      handlerName: connection.handler.name,
      windowEndAt,
      authEndsAt: connection.authEndsAt,
    };
  }

  /** After a Redis reconnection: every authorized session here, to be written again. */
  *restarts(): Iterable<[SessionStart, SessionSubscriptions]> {
    for (const connection of this.digestOf.keys()) {
      const start = connection.state === 'pending' ? null : this.startOf(connection);
      if (start !== null) yield [start, this.parts.read(connection)];
    }
  }

  /** SPEC §12.3: the session `token` resumes, wherever the store finds it; a failure is counted. */
  takeOver(token: string, handlerName: string): Takeover | Promise<Takeover> {
    return this.store.takeOver(token, handlerName);
  }

  /** A session taken over from its record is held here now. */
  adopted(record: SessionRecord): void {
    this.store.adopted(record);
  }

  /** Cluster mode: `connection` (re)takes the session with the token its takeover issued. */
  adoptToken(connection: Connection, token: string): void {
    const digest = tokenDigest(token);
    const previous = this.digestOf.get(connection);
    if (previous !== undefined) this.byDigest.delete(previous);
    this.byDigest.set(digest, connection);
    this.digestOf.set(connection, digest);
  }

  /**
   * Cluster mode: another node took over the session (its takeover script
   * told us on our node channel). The old socket, if still open, is closed
   * with 4409; the session is forgotten here without any presence change.
   */
  takenElsewhere(connectionId: string, generation: number): void {
    const connection = this.registry.get(connectionId);
    if (connection === undefined || !connection.isResumable || connection.generation >= generation) return;
    this.handOver(connection);
    if (connection.userId !== null) this.store.released(connectionId, connection.userId);
  }

  /**
   * A write to the session's record found another node holding it (its
   * takeover notice is still on its way): the copy here goes as on the
   * notice, and the move goes on to the broker, which sends the command to the holder.
   */
  movedAway(connection: Connection, moved: Moved): Moved {
    if (!this.registry.holds(connection)) return moved;
    this.handOver(connection);
    if (connection.userId !== null) this.store.released(connection.id, connection.userId);
    return moved;
  }

  /** Forget a session another node holds now: 4409 for its socket, no detach, no presence change. */
  handOver(connection: Connection): void {
    connection.isHandedOver = true;
    if (connection.state !== 'detached') connection.close(CLOSE_SESSION_RESUMED, REASON_SESSION_RESUMED);
    this.registry.remove(connection);
  }

  /**
   * Cluster mode, SPEC §12.6: a DELETE for `connectionId` reached this node
   * (its session was revoked in Redis first). Remembered for a while: a
   * takeover of it that Redis ran just before the revocation, whose reply is
   * still on its way here, is then dropped instead of rebuilt.
   */
  markRevoked(connectionId: string): void {
    const now = Date.now();
    for (const [old, forgetAt] of this.revoked) {
      if (forgetAt > now && this.revoked.size < MAX_REVOKED_REMEMBERED) break;
      this.revoked.delete(old);
    }
    this.revoked.set(connectionId, now + REVOKED_MEMORY_MS);
  }

  isRevoked(connectionId: string): boolean {
    const forgetAt = this.revoked.get(connectionId);
    return forgetAt !== undefined && forgetAt > Date.now();
  }

  /**
   * A copy here of a session that another node held when it was revoked
   * (the takeover's notice is still on its way): it goes with 4403, with no
   * presence change (the holder's count goes when the holder ends it).
   */
  dropStale(connection: Connection): void {
    connection.isHandedOver = true;
    connection.close(CLOSE_DISCONNECTED, REASON_DISCONNECTED);
    this.registry.remove(connection);
    if (connection.userId !== null) this.store.released(connection.id, connection.userId);
  }

  /** Revoked while this node could not hear of it: its copy here ends now (close 4403), as the DELETE would have. */
  endRevoked(connectionId: string): void {
    const connection = this.registry.get(connectionId);
    if (connection === undefined || !connection.isResumable) return;
    connection.close(CLOSE_DISCONNECTED, REASON_DISCONNECTED);
    this.registry.remove(connection);
  }

  /** SPEC §15.2, cluster mode: a session held by no node, as its record has it; null otherwise (and on one node). */
  orphanedSession(connectionId: string): Promise<OrphanedSession | null> {
    return this.store.orphaned(connectionId);
  }

  /** SPEC §15.2: the ids of `userId`'s sessions held by no node (cluster mode); none on one node. */
  orphanedSessionsOf(userId: string): Promise<string[]> {
    return this.userSessions.orphanedOf(userId);
  }

  /** RESUME_WINDOW in whole seconds, as the hello's `window` gives it. */
  get windowSeconds(): number {
    return Math.round(this.config.resume.windowMs / 1000);
  }

  /** A new single-use token for `connection`; the previous one is void (SPEC §12.1). */
  issueToken(connection: Connection): string {
    const token = newSessionToken(connection.id);
    const digest = tokenDigest(token);
    const previous = this.digestOf.get(connection);
    if (previous !== undefined) this.byDigest.delete(previous);
    this.byDigest.set(digest, connection);
    this.digestOf.set(connection, digest);
    return token;
  }

  /** The session a token resumes in this node's memory, on the handler it was opened on; counts a failure. */
  lookUp(token: string, handlerName: string): TokenLookup {
    const digest = tokenDigest(token);
    const connection = this.byDigest.get(digest);
    if (
      connection !== undefined &&
      isSameDigest(this.digestOf.get(connection)!, digest) &&
      connection.handler.name === handlerName
    ) {
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
    this.windowEnds.delete(connection);
    this.detachedPerUser.gone(connection.userId, connection);
    this.results.resumed.inc();
    this.resumeRate.resumed(connection.id);
  }

  /**
   * The socket of `connection` closed. A resumable session that lost it
   * without the client's goodbye is detached for RESUME_WINDOW (SPEC §12.2);
   * everything else leaves the registry at once.
   */
  socketClosed(connection: Connection, peerCloseCode: number): void {
    const isDetached =
      this.digestOf.has(connection) &&
      connection.identity !== null &&
      this.registry.holds(connection) &&
      isDetachedByClose(connection.closedWith, peerCloseCode);
    if (!isDetached) return this.registry.remove(connection);
    this.registry.detach(connection);
    const windowEndAt = Date.now() + this.config.resume.windowMs;
    this.windowEnds.set(connection, windowEndAt);
    this.store.detached(connection, windowEndAt);
    const timer = setTimeout(() => this.registry.remove(connection), this.config.resume.windowMs);
    timer.unref();
    this.windowTimers.set(connection, timer);
    this.boundDetached(connection);
  }

  /**
   * SPEC §12.2: one detached session more than RESUME_MAX_DETACHED_PER_USER
   * ends the user's oldest, as its window end would, so one client cannot
   * fill MAX_CONNECTIONS with sockets it dropped. A drain's detaches are not
   * counted: the node is going away, and in cluster mode they resume elsewhere.
   */
  private boundDetached(connection: Connection): void {
    if (connection.closedWith?.reason === REASON_SERVICE_RESTART) return;
    const oldest = this.detachedPerUser.detached(connection.userId!, connection);
    if (oldest !== null) this.registry.remove(oldest);
  }

  onModuleDestroy(): void {
    for (const timer of this.windowTimers.values()) clearTimeout(timer);
    this.store.stop();
  }

  /** This node's sessions, for the refresh of their records. */
  *held(): Iterable<HeldSession> {
    for (const [connection, digest] of this.digestOf) {
      if (connection.userId !== null)
        yield {
          connectionId: connection.id,
          userId: connection.userId,
          digest,
          isDetached: connection.state === 'detached',
        };
    }
  }

  private forget(connection: Connection): void {
    const digest = this.digestOf.get(connection);
    if (digest === undefined) return;
    this.digestOf.delete(connection);
    this.byDigest.delete(digest);
    const timer = this.windowTimers.get(connection);
    if (timer !== undefined) clearTimeout(timer);
    this.windowTimers.delete(connection);
    this.windowEnds.delete(connection);
    this.detachedPerUser.gone(connection.userId, connection);
    this.store.forget(connection.id);
    // Taken over elsewhere: the session goes on, its token was not ended.
    if (!connection.isHandedOver) this.remember(digest);
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
