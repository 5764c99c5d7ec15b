import { Injectable, Logger } from '@nestjs/common';
import { Handler } from '../config/gateway-config';
import { Connection } from '../connections/connection';
import { ConnectionRegistry } from '../connections/connection-registry';
import { CLOSE_SESSION_RESUMED, REASON_SESSION_RESUMED } from '../protocol/close-codes';
import { encodeResumeMeta } from '../protocol/frames';
import { PubSubService, ReplayPlan } from '../pubsub/pubsub.service';
import { ResumableSessionsService } from '../resume/resumable-sessions.service';
import { GatewaySocket } from './gateway-socket';
import { HelloSequenceService } from './hello-sequence.service';
import { ResumeOffer, ResumeRequest } from './resume-offer';

/**
 * The WebSocket edge of SPEC §12: the hello meta of a resumable session, a
 * resume onto a new socket, and what a closed socket means for its session.
 */
@Injectable()
export class SessionResumeService {
  private readonly logger = new Logger(SessionResumeService.name);

  constructor(
    private readonly registry: ConnectionRegistry,
    private readonly sessions: ResumableSessionsService,
    private readonly pubsub: PubSubService,
    private readonly helloSequence: HelloSequenceService,
  ) {}

  /**
   * SPEC §12.3: resume the session `request` names onto `socket`, or null when
   * it cannot be (the handshake then proceeds as a normal connection).
   */
  resume(socket: GatewaySocket, handler: Handler, request: ResumeRequest): Connection | null {
    if (request.kind === 'unreadable') {
      this.sessions.countFailure('invalid');
      return null;
    }
    if (request.kind !== 'resume') return null;
    const found = this.sessions.lookUp(request.offer.token, handler.name);
    if (!found.ok) return null;
    const connection = found.connection;
    const old = connection.socket;
    this.registry.reattach(connection, socket);
    socket.connection = connection;
    this.sessions.resumed(connection);
    // A half-open old socket: its close no longer concerns the session (its handler sees another socket).
    if (old.readyState === old.OPEN || old.readyState === old.CONNECTING) old.close(CLOSE_SESSION_RESUMED, REASON_SESSION_RESUMED);
    void this.greetResumed(connection, request.offer);
    return connection;
  }

  /** The hello meta of a new connection: `{}` for a legacy one, the resume object otherwise (SPEC §12.1). */
  helloMeta(connection: Connection, request: ResumeRequest): string {
    if (!connection.isResumable) return '{}';
    const isFailedResume = request.kind === 'resume' || request.kind === 'unreadable';
    return encodeResumeMeta(this.sessions.issueToken(connection), this.sessions.windowSeconds, isFailedResume ? false : undefined);
  }

  /** The socket of `connection` closed: a resumable session may be detached (SPEC §12.2), anything else ends. */
  socketClosed(connection: Connection, peerCloseCode: number): void {
    if (connection.isResumable) this.sessions.socketClosed(connection, peerCloseCode);
    else this.registry.remove(connection);
  }

  /**
   * hello (resumed, lost) → missed messages → snapshots → live. The replay
   * may be read from Redis (cluster mode): meanwhile the connection is held
   * (live frames kept, then sent only beyond what was replayed: no duplicate,
   * no gap, SPEC §12.3). A socket that closed or was replaced meanwhile gets
   * nothing, and the token it came with stays valid.
   */
  private async greetResumed(connection: Connection, offer: ResumeOffer): Promise<void> {
    const socket = connection.socket;
    connection.holdForReplay();
    let plan: ReplayPlan;
    try {
      plan = await this.pubsub.replay(connection, offer.positions);
    } catch (err) {
      this.logger.error({ msg: 'resume replay failed', connection_id: connection.id, error: (err as Error).message });
      plan = { lostTopics: [], frames: [], upTo: new Map() };
    }
    if (connection.socket !== socket || connection.state !== 'pending') return;
    const meta = encodeResumeMeta(this.sessions.issueToken(connection), this.sessions.windowSeconds, true, plan.lostTopics);
    if (Logger.isLevelEnabled('log')) {
      this.logger.log({ msg: 'connection resumed', connection_id: connection.id, user_id: connection.userId, replayed: plan.frames.length, lost: plan.lostTopics.length });
    }
    this.helloSequence.sendResumed(connection, meta, plan);
  }
}
