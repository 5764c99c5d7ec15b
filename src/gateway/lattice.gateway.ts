import { Logger } from '@nestjs/common';
import { OnGatewayConnection, OnGatewayDisconnect, WebSocketGateway } from '@nestjs/websockets';
import type { IncomingMessage } from 'node:http';
import type { WebSocket } from 'ws';
import { Handler } from '../config/gateway-config';
import { Connection } from '../connections/connection';
import { ConnectionRegistry } from '../connections/connection-registry';
import { CLOSE_INTERNAL_ERROR, REASON_INTERNAL_ERROR } from '../protocol/close-codes';
import { ClientFramesService } from './client-frames.service';
import { GatewaySocket, connectionOf } from './gateway-socket';
import { HelloService } from './hello.service';
import { ResumeRequest } from './resume-offer';
import { SessionResumeService } from './session-resume.service';

/**
 * The WebSocket edge: lifecycle only (STYLE B3, B12). Frames go straight from
 * the socket's 'message' event to ClientFramesService. The socket listeners
 * are shared functions reading `this.connection`, not closures: an idle
 * connection costs no listener memory of its own.
 */
@WebSocketGateway()
export class LatticeGateway implements OnGatewayConnection, OnGatewayDisconnect {
  private readonly logger = new Logger(LatticeGateway.name);
  private readonly onMessage: (this: WebSocket, data: Buffer, isBinary: boolean) => void;
  private readonly onCloseLog: (this: WebSocket, code: number, reason: Buffer) => void;

  constructor(
    private readonly registry: ConnectionRegistry,
    frames: ClientFramesService,
    private readonly hello: HelloService,
    private readonly resumer: SessionResumeService,
  ) {
    this.onMessage = function (data, isBinary) {
      const connection = connectionOf(this);
      // A socket whose session was resumed on another one (SPEC §12.3) has nothing more to say.
      if (connection.socket === this) frames.onFrame(connection, data, isBinary);
    };
    const logger = this.logger;
    this.onCloseLog = function (code, reason) {
      const connection = connectionOf(this);
      // When we closed first, our code and reason say why: a slow consumer's
      // handshake never completes, so ws itself reports 1006 with no reason.
      const sent = connection.closedWith;
      // A client's own reason is text it chose (SPEC §10 logs sizes, never client text): its length only.
      const closed =
        sent === null ? { code, reason_bytes: reason.length, closed_by: 'client' } : { ...sent, closed_by: 'gateway' };
      logger.log({ msg: 'connection closed', connection_id: connection.id, user_id: connection.userId, ...closed });
    };
  }

  handleConnection(
    socket: GatewaySocket,
    req: IncomingMessage,
    handler: Handler,
    resume: ResumeRequest = NO_RESUME,
  ): void {
    const resumed = this.resumer.resume(socket, handler, resume);
    if (resumed instanceof Promise) return this.resumeLater(socket, req, handler, resume, resumed);
    this.listen(socket);
    if (resumed !== null) return;
    this.open(socket, req, handler, resume);
  }

  /**
   * Cluster mode (SPEC §12.5): the resume is decided in Redis. The client's
   * frames wait meanwhile (kept in order, replayed once there is a connection).
   */
  private resumeLater(
    socket: GatewaySocket,
    req: IncomingMessage,
    handler: Handler,
    resume: ResumeRequest,
    resumed: Promise<Connection | null>,
  ): void {
    const early: Array<[Buffer, boolean]> = [];
    const keep = (data: Buffer, isBinary: boolean) => void early.push([data, isBinary]);
    socket.on('message', keep);
    socket.pause();
    const settle = (connection: Connection | null) => {
      socket.off('message', keep);
      const isGone = socket.readyState !== socket.OPEN;
      if (connection === null) {
        if (isGone) return;
        this.open(socket, req, handler, resume);
      } else if (isGone) {
        // The client left while its session came here: detached (or ended) as if it closed now.
        const isLive = connection.state === 'ready' || connection.state === 'pending';
        if (connection.socket === socket && isLive) this.resumer.socketClosed(connection, socket.peerCloseCode || 1006);
        // Closed by us meanwhile (a DELETE ended the session): read on, so the closing handshake completes.
        if (socket.readyState === socket.CLOSING) socket.resume();
        return;
      }
      this.listen(socket);
      socket.resume();
      for (const [data, isBinary] of early) this.onMessage.call(socket, data, isBinary);
    };
    resumed.then(settle, (err: unknown) => {
      this.logger.error({ msg: 'resume failed', error: err instanceof Error ? err.name : 'unknown' });
      settle(null);
    });
  }

  private open(socket: GatewaySocket, req: IncomingMessage, handler: Handler, resume: ResumeRequest): void {
    const connection = this.registry.open(socket, handler, resume.kind !== 'none');
    socket.connection = connection;
    if (Logger.isLevelEnabled('log'))
      this.logger.log({ msg: 'connection opened', connection_id: connection.id, handler: handler.name });
    const helloMeta = this.resumer.helloMeta(connection, resume);
    this.hello.start(connection, req, helloMeta).catch((err: unknown) => {
      // A bug: no answer of the backend may end here (SPEC §3), so it is logged, never swallowed.
      this.logger.error({
        msg: 'connection start failed',
        connection_id: connection.id,
        error: err instanceof Error ? err.name : 'unknown',
      });
      connection.close(CLOSE_INTERNAL_ERROR, REASON_INTERNAL_ERROR);
    });
  }

  handleDisconnect(socket: GatewaySocket): void {
    const connection = socket.connection;
    // Not the session's socket any more: it was resumed on another (SPEC §12.3).
    if (connection === null || connection.socket !== socket) return;
    this.resumer.socketClosed(connection, socket.peerCloseCode);
  }

  private listen(socket: GatewaySocket): void {
    socket.on('message', this.onMessage);
    socket.on('error', terminate);
    if (Logger.isLevelEnabled('log')) socket.on('close', this.onCloseLog);
  }
}

const NO_RESUME: ResumeRequest = { kind: 'none' };

function terminate(this: WebSocket): void {
  this.terminate();
}
