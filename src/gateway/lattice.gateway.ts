import { Logger } from '@nestjs/common';
import { OnGatewayConnection, OnGatewayDisconnect, WebSocketGateway } from '@nestjs/websockets';
import type { IncomingMessage } from 'node:http';
import type { WebSocket } from 'ws';
import { Handler } from '../config/gateway-config';
import { Connection } from '../connections/connection';
import { CLOSE_INTERNAL_ERROR, REASON_INTERNAL_ERROR } from '../protocol/close-codes';
import { ConnectionRegistry } from '../connections/connection-registry';
import { ClientFramesService } from './client-frames.service';
import { HelloService } from './hello.service';

/**
 * The WebSocket edge: lifecycle only (STYLE B3, B12). Frames go straight from
 * the socket's 'message' event to ClientFramesService.
 */
@WebSocketGateway()
export class LatticeGateway implements OnGatewayConnection, OnGatewayDisconnect {
  private readonly bySocket = new WeakMap<WebSocket, Connection>();
  private readonly logger = new Logger(LatticeGateway.name);

  constructor(
    private readonly registry: ConnectionRegistry,
    private readonly frames: ClientFramesService,
    private readonly hello: HelloService,
  ) {}

  handleConnection(socket: WebSocket, req: IncomingMessage, handler: Handler): void {
    const connection = this.registry.open(socket, handler);
    this.bySocket.set(socket, connection);
    socket.on('message', (data: Buffer, isBinary: boolean) => this.frames.onFrame(connection, data, isBinary));
    socket.on('pong', () => (connection.lastSeenAt = Date.now()));
    socket.on('error', () => socket.terminate());
    if (Logger.isLevelEnabled('log')) {
      socket.once('close', (code: number, reason: Buffer) => {
        this.logger.log({ msg: 'connection closed', connection_id: connection.id, user_id: connection.userId, code, reason: reason.toString() });
      });
      this.logger.log({ msg: 'connection opened', connection_id: connection.id, handler: handler.name });
    }
    this.hello.start(connection, req).catch(() => connection.close(CLOSE_INTERNAL_ERROR, REASON_INTERNAL_ERROR));
  }

  handleDisconnect(socket: WebSocket): void {
    const connection = this.bySocket.get(socket);
    if (connection !== undefined) this.registry.remove(connection);
  }
}
