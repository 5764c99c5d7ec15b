import { Inject, Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import { Identity } from '../protocol/identity';
import { GatewayConfig, Handler } from '../config/gateway-config';
import { Connection } from '../connections/connection';
import { ConnectionRegistry } from '../connections/connection-registry';
import { SESSION_INACTIVE_METHOD } from '../upstream/destinations';
import { UpstreamClient } from '../upstream/upstream.client';
import { UpstreamRoutes } from '../upstream/upstream-routes';
import { clampActiveMs, extendDeadline } from './activity';
import { DeadlineQueue } from '../scheduling/deadline-queue';
import { ClusterSessions } from './cluster-sessions';

/** A user's presence status (SPEC §7). */
export type PresenceStatus = 'active' | 'inactive' | 'offline';
/** `atMs`: the status register's version (epoch ms; Redis time in cluster mode). */
export type StatusListener = (userId: string, status: PresenceStatus, atMs: number) => void;

interface Session {
  readonly userId: string;
  status: 'active' | 'inactive';
  deadlineAt: number;
  /** Identity and handler of the latest authorization: who the inactivity notice speaks for. */
  identity: Identity;
  handler: Handler;
}

const INACTIVE_BODY = '[{},[],{}]';

/**
 * Sessions and inactivity (SPEC §8): one activity deadline per user, shared by
 * its connections; status changes are announced to listeners (presence).
 */
@Injectable()
export class SessionsService implements OnModuleDestroy {
  private readonly logger = new Logger(SessionsService.name);
  private readonly sessions = new Map<string, Session>();
  private readonly listeners: StatusListener[] = [];
  /** Every active session's deadline; one timer for the earliest (no Timeout per user). */
  private readonly deadlines = new DeadlineQueue<Session>();
  private timer: NodeJS.Timeout | null = null;
  private timerAt: number | null = null;
  constructor(
    private readonly config: GatewayConfig,
    private readonly registry: ConnectionRegistry,
    private readonly upstream: UpstreamClient,
    private readonly routes: UpstreamRoutes,
    /** Cluster mode: deadlines and statuses live in Redis (SPEC §11); null on a single node. */
    @Inject(ClusterSessions) private readonly cluster: ClusterSessions | null,
  ) {
    registry.onRemove((connection) => this.onConnectionGone(connection));
    cluster?.bind(
      (userId, status, version) => this.announce(userId, status, version),
      (userId, authorization, handlerName) => {
        const handler = config.handlers.find((h) => h.name === handlerName) ?? config.handlers[0];
        this.notifyInactive(userId, authorization, handler);
      },
    );
  }

  onStatusChange(listener: StatusListener): void {
    this.listeners.push(listener);
  }

  /** Current status of a user on this node, or null when it has no session. */
  statusOf(userId: string): PresenceStatus | null {
    return this.sessions.get(userId)?.status ?? null;
  }

  /**
   * SPEC §8: a user authorized a connection. In cluster mode it resolves once
   * Redis counted it (its status is then known for the hello snapshots).
   */
  authorized(connection: Connection): Promise<void> | void {
    const identity = connection.identity!;
    const windowMs = this.config.sessions.newConnectionIdleTimeoutMs;
    if (this.cluster !== null)
      return this.cluster.connected(identity.userId, windowMs, identity.authorization, connection.handler.name);
    const session = this.sessions.get(identity.userId);
    if (session === undefined) {
      const created: Session = {
        userId: identity.userId,
        status: 'active',
        deadlineAt: Date.now() + windowMs,
        identity,
        handler: connection.handler,
      };
      this.sessions.set(identity.userId, created);
      this.schedule(created);
      this.announce(identity.userId, 'active');
      return;
    }
    session.identity = identity;
    session.handler = connection.handler;
    this.extend(identity.userId, session, windowMs);
  }

  /** SPEC §8: a valid call carried `active: N` seconds. */
  touch(userId: string, activeSeconds: number): void {
    const { clientMinIdleTimeoutMs, clientMaxIdleTimeoutMs } = this.config.sessions;
    const windowMs = clampActiveMs(activeSeconds, clientMinIdleTimeoutMs, clientMaxIdleTimeoutMs);
    if (this.cluster !== null) return this.cluster.touch(userId, windowMs);
    const session = this.sessions.get(userId);
    if (session === undefined) return;
    this.extend(userId, session, windowMs);
  }

  /** Cluster mode: this node's presence is withdrawn before the link closes (SPEC §11 "Drain"). */
  async onModuleDestroy(): Promise<void> {
    if (this.timer !== null) clearTimeout(this.timer);
    await this.cluster?.stop();
  }

  private extend(userId: string, session: Session, windowMs: number): void {
    session.deadlineAt = extendDeadline(session.deadlineAt, Date.now(), windowMs);
    if (session.status === 'inactive') {
      // [fix] an inactive session becomes active again.
      session.status = 'active';
      this.schedule(session);
      this.announce(userId, 'active');
    }
  }

  /** Queue the session's deadline; extensions are picked up lazily when the entry comes due. */
  private schedule(session: Session): void {
    this.deadlines.push(session.deadlineAt, session);
    if (this.timerAt === null || session.deadlineAt < this.timerAt) this.arm();
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
    for (const entry of this.deadlines.popDue(Date.now())) this.onDeadline(entry.key);
    if (this.timerAt === null) this.arm();
  }

  private onDeadline(session: Session): void {
    const userId = session.userId;
    // Stale entry: the session ended, was replaced, or went inactive meanwhile.
    if (this.sessions.get(userId) !== session || session.status !== 'active') return;
    if (session.deadlineAt > Date.now()) return this.schedule(session);
    this.notifyInactive(userId, session.identity.authorization, session.handler);
    if (this.registry.hasUser(userId)) {
      session.status = 'inactive';
      this.announce(userId, 'inactive');
    } else {
      this.end(userId);
    }
  }

  /**
   * Cluster mode, SPEC §12.5: this node took over a resumable session of
   * another node (its count moved here in Redis); `deadlineAt` is the user's
   * deadline there. Nothing is announced: resuming is not activity (§12.2).
   */
  adopted(connection: Connection, deadlineAt: number): void {
    const identity = connection.identity!;
    this.cluster?.adopted(identity.userId, identity.authorization, connection.handler.name, deadlineAt);
  }

  /** Cluster mode: runs before a drained or dead node's presence is removed (SPEC §12.5: its resumable sessions detach first). */
  beforeRemoveNode(hook: (nodeId: string) => Promise<void>): void {
    this.cluster?.beforeRemoveNode(hook);
  }

  private onConnectionGone(connection: Connection): void {
    const userId = connection.userId;
    if (userId !== null && this.cluster !== null) {
      // Taken over by another node, which counts it now (SPEC §12.5).
      if (connection.isHandedOver) return this.cluster.handedOver(userId);
      return void this.cluster.disconnected(userId, connection.isResumable ? connection.id : null);
    }
    if (userId === null || this.registry.hasUser(userId)) return;
    if (this.sessions.get(userId)?.status === 'inactive') this.end(userId);
  }

  private end(userId: string): void {
    this.sessions.delete(userId);
    this.announce(userId, 'offline');
  }

  private notifyInactive(userId: string, authorization: string, handler: Handler): void {
    if (!this.config.sessions.shouldNotifyInactive) return;
    const route = this.routes.tableFor(handler).route(SESSION_INACTIVE_METHOD);
    // Response ignored, no retry (SPEC §8); post() never throws.
    void this.upstream.post(route, INACTIVE_BODY, { authorization }, 'inactive');
    this.logger.debug({ msg: 'session inactive', user_id: userId });
  }

  private announce(userId: string, status: PresenceStatus, atMs = Date.now()): void {
    for (const listener of this.listeners) listener(userId, status, atMs);
  }
}
