import { INestApplicationContext } from '@nestjs/common';
import { WsAdapter } from '@nestjs/platform-ws';
import type { WebSocket, WebSocketServer } from 'ws';

/**
 * Hands Nest OUR noServer WebSocketServer (owned by PublicListener) and binds
 * no message handlers: frames never go through Nest's rxjs pipeline (STYLE B9).
 * Closing sockets is the lifecycle's job, not the adapter's.
 */
export class GatewayWsAdapter extends WsAdapter {
  constructor(
    app: INestApplicationContext,
    private readonly wss: WebSocketServer,
  ) {
    super(app);
  }

  override create(): WebSocketServer {
    return this.wss;
  }

  override bindMessageHandlers(): void {}

  override bindClientDisconnect(client: WebSocket, callback: () => void): void {
    client.once('close', callback);
  }

  override async close(): Promise<void> {}

  override async dispose(): Promise<void> {}
}
