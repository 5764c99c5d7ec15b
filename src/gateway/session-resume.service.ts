import { Injectable, Logger } from '@nestjs/common';
import { Handler } from '../config/gateway-config';
import { Connection } from '../connections/connection';
import { ConnectionRegistry } from '../connections/connection-registry';
import { CLOSE_SESSION_RESUMED, REASON_SESSION_RESUMED } from '../protocol/close-codes';
import { encodeResumeMeta } from '../protocol/frames';
import { Identity } from '../protocol/identity';
import { PubSubService } from '../pubsub/pubsub.service';
import { ReplayPlan } from '../pubsub/topic-stream';
import { ResumableSessionsService } from '../resume/resumable-sessions.service';
import { SessionParts } from '../resume/session-parts';
import { Takeover } from '../resume/session-store';
import { SessionRecord } from '../resume/session-record';
import { ActivityService } from '../activity/activity.service';
import { GatewaySocket } from './gateway-socket';
import { HelloSequenceService } from './hello-sequence.service';
import { ResumeOffer, ResumeRequest } from './resume-offer';
import { AuthLifetimeService } from './auth-lifetime.service';

/**
 * The WebSocket edge of SPEC §12: the hello meta of a resumable session, a
 * resume onto a new socket, and what a closed socket means for its session.
 * In cluster mode (§12.5) a resume goes through the session's record in
 * Redis, so it works on any node; a session held elsewhere is rebuilt here.
 */
@Injectable()
export class SessionResumeService {
  private readonly logger = new Logger(SessionResumeService.name);

  constructor(
    private readonly registry: ConnectionRegistry,
    private readonly sessions: ResumableSessionsService,
    private readonly pubsub: PubSubService,
    private readonly helloSequence: HelloSequenceService,
    private readonly parts: SessionParts,
    private readonly activity: ActivityService,
    private readonly lifetimes: AuthLifetimeService,
  ) {}

  /**
   * SPEC §12.3: resume the session `request` names onto `socket`, or null when
   * it cannot be (the handshake then proceeds as a normal connection). In
   * cluster mode the answer comes from the session's record in Redis: a promise.
   */
  resume(
    socket: GatewaySocket,
    handler: Handler,
    request: ResumeRequest,
  ): Connection | null | Promise<Connection | null> {
    if (request.kind === 'unreadable') {
      this.sessions.countFailure('invalid');
      return null;
    }
    if (request.kind !== 'resume') return null;
    const offer = request.offer;
    const taken = this.sessions.takeOver(offer.token, handler.name);
    return taken instanceof Promise
      ? taken.then((settled) => this.resumeTaken(socket, handler, offer, settled))
      : this.resumeTaken(socket, handler, offer, taken);
  }

  private resumeTaken(
    socket: GatewaySocket,
    handler: Handler,
    offer: ResumeOffer,
    taken: Takeover,
  ): Connection | null | Promise<Connection | null> {
    switch (taken.kind) {
      case 'none':
        return null;
      case 'record':
        return this.resumeFromRecord(socket, handler, offer, taken.record, taken.token);
      case 'here':
        // SPEC §14: a lifetime that ended meanwhile is refreshed before the resumed hello.
        if (this.lifetimes.hasEnded(taken.connection)) return this.refreshThenResume(taken.connection, socket, offer);
        return this.resumeHere(taken.connection, socket, offer);
    }
  }

  private resumeHere(connection: Connection, socket: GatewaySocket, offer: ResumeOffer): Connection {
    this.reattach(connection, socket);
    connection.holdForReplay();
    this.lifetimes.resumed(connection);
    void this.greetResumed(connection, offer, null);
    return connection;
  }

  /** SPEC §14: refreshed first; a refused refresh ended the session, and the handshake is a normal connect. */
  private async refreshThenResume(
    connection: Connection,
    socket: GatewaySocket,
    offer: ResumeOffer,
  ): Promise<Connection | null> {
    if (!(await this.lifetimes.refreshBeforeResume(connection))) return null;
    // Resumed on another socket meanwhile (its token was still valid) or ended: this handshake is a normal connect.
    if (!this.registry.holds(connection) || connection.state === 'pending') return null;
    return this.resumeHere(connection, socket, offer);
  }

  /** The hello meta of a new connection: `{}` for a legacy one, the resume object otherwise (SPEC §12.1). */
  helloMeta(connection: Connection, request: ResumeRequest): string {
    if (!connection.isResumable) return '{}';
    const isFailedResume = request.kind === 'resume' || request.kind === 'unreadable';
    return encodeResumeMeta(
      this.sessions.issueToken(connection),
      this.sessions.windowSeconds,
      isFailedResume ? false : undefined,
    );
  }

  /** Cluster mode: before hello, the new session's record is written (resumable on any node from then on). */
  started(connection: Connection): Promise<void> | undefined {
    return connection.isResumable ? this.sessions.started(connection) : undefined;
  }

  /** The socket of `connection` closed: a resumable session may be detached (SPEC §12.2), anything else ends. */
  socketClosed(connection: Connection, peerCloseCode: number): void {
    if (connection.isResumable) this.sessions.socketClosed(connection, peerCloseCode);
    else this.registry.remove(connection);
  }

  /**
   * SPEC §12.5: the takeover script moved the session to this node at once.
   * Held here already: it takes the new socket. Held elsewhere or by no
   * node: rebuilt from its record under the same connection id, user and
   * authorization response, subscriptions back in place before the hello.
   */
  private async resumeFromRecord(
    socket: GatewaySocket,
    handler: Handler,
    offer: ResumeOffer,
    record: SessionRecord,
    token: string,
  ): Promise<Connection | null> {
    // SPEC §12.6: revoked right after this takeover, its DELETE already here: the session ends, a normal connect follows.
    if (this.sessions.isRevoked(record.connectionId)) return this.endTakenRevoked(socket, handler, record);
    const local = this.registry.get(record.connectionId);
    if (local !== undefined && local.isResumable && record.previousHolder === this.registry.nodeId) {
      // SPEC §14: a lifetime that ended meanwhile is refreshed first; refused, the session ended here.
      if (this.lifetimes.hasEnded(local) && !(await this.lifetimes.refreshBeforeResume(local))) return null;
      local.generation = record.generation;
      this.reattach(local, socket);
      local.holdForReplay();
      this.lifetimes.resumed(local);
      this.sessions.adoptToken(local, token);
      void this.greetResumed(local, offer, token);
      return local;
    }
    // A stale copy here (this node was paused past its liveness timeout, say): the record wins.
    if (local !== undefined) this.sessions.handOver(local);
    return this.rebuild(socket, handler, record, offer, token);
  }

  private async rebuild(
    socket: GatewaySocket,
    handler: Handler,
    record: SessionRecord,
    offer: ResumeOffer,
    token: string,
  ): Promise<Connection | null> {
    const connection = this.registry.adopt(record.connectionId, socket, handler);
    // Live frames of its topics are held from now until the replay is out, then sent beyond it only (SPEC §12.3).
    connection.holdForReplay();
    connection.generation = record.generation;
    connection.identity = new Identity(record.userId, record.authJson);
    this.registry.bindUser(connection, record.userId);
    socket.connection = connection;
    this.activity.adopted(connection, record.deadlineAt);
    this.sessions.adoptToken(connection, token);
    this.sessions.adopted(record);
    try {
      await this.parts.restore(connection, record);
    } catch (err) {
      // Redis failed halfway (the takeover itself went through): the session ends here as if closed,
      // nothing half-built stays behind, and the socket goes on as a normal connect (resumed: false).
      this.logger.error({ msg: 'session rebuild failed', connection_id: connection.id, error: (err as Error).message });
      if (socket.connection === connection) socket.connection = null;
      this.registry.remove(connection);
      return null;
    }
    // SPEC §14: the record's lifetime goes on here; one that ended is refreshed before the hello.
    connection.authEndsAt = record.authEndsAt;
    this.lifetimes.adopted(connection);
    if (this.lifetimes.hasEnded(connection) && !(await this.lifetimes.refreshBeforeResume(connection))) {
      if (socket.connection === connection) socket.connection = null;
      return null;
    }
    // Ended meanwhile (DELETE /v1/connection, taken over again), or detached (its client left again).
    if (connection.state !== 'pending') return connection;
    if (Logger.isLevelEnabled('log')) {
      this.logger.log({
        msg: 'session taken over',
        connection_id: connection.id,
        user_id: record.userId,
        from_node: record.previousHolder === '' ? null : record.previousHolder,
      });
    }
    void this.greetResumed(connection, offer, token);
    return connection;
  }

  /**
   * The takeover moved the session (and its presence count) here, but its
   * revocation came first: registered and removed at once, so its count
   * leaves as the holder's confirmation of the end (the presence leave script).
   */
  private endTakenRevoked(socket: GatewaySocket, handler: Handler, record: SessionRecord): null {
    const local = this.registry.get(record.connectionId);
    if (local !== undefined) this.sessions.handOver(local);
    const connection = this.registry.adopt(record.connectionId, socket, handler);
    connection.identity = new Identity(record.userId, record.authJson);
    this.registry.bindUser(connection, record.userId);
    this.registry.remove(connection);
    return null;
  }

  /** The session takes `socket`; a half-open old socket is closed with 4409 (its close no longer concerns the session). */
  private reattach(connection: Connection, socket: GatewaySocket): void {
    const old = connection.socket;
    this.registry.reattach(connection, socket);
    socket.connection = connection;
    if (old !== socket && (old.readyState === old.OPEN || old.readyState === old.CONNECTING))
      old.close(CLOSE_SESSION_RESUMED, REASON_SESSION_RESUMED);
  }

  /**
   * hello (resumed, lost) → missed messages → snapshots → live, for a
   * session its caller holds (Connection.holdForReplay). The replay may be
   * read from Redis (cluster mode): live frames are held meanwhile and then
   * sent only beyond what was replayed (no duplicate, no gap, SPEC §12.3). A
   * socket that closed or was replaced meanwhile gets nothing; on one node the
   * token it came with then stays valid (`token` null: issued here, after the
   * replay; in cluster mode the takeover script issued it).
   */
  private async greetResumed(connection: Connection, offer: ResumeOffer, token: string | null): Promise<void> {
    this.sessions.resumed(connection);
    const socket = connection.socket;
    let plan: ReplayPlan;
    try {
      plan = await this.pubsub.replay(connection, offer.positions);
    } catch (err) {
      this.logger.error({ msg: 'resume replay failed', connection_id: connection.id, error: (err as Error).message });
      plan = { lostTopics: [], frames: [], upTo: new Map() };
    }
    if (connection.socket !== socket || connection.state !== 'pending') return;
    const replayed = offer.countReplayed ? plan.frames.length : undefined;
    const meta = encodeResumeMeta(
      token ?? this.sessions.issueToken(connection),
      this.sessions.windowSeconds,
      true,
      plan.lostTopics,
      replayed,
    );
    if (Logger.isLevelEnabled('log')) {
      this.logger.log({
        msg: 'connection resumed',
        connection_id: connection.id,
        user_id: connection.userId,
        replayed: plan.frames.length,
        lost: plan.lostTopics.length,
      });
    }
    this.helloSequence.sendResumed(connection, meta, plan);
  }
}
