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

  /** ws emits 'close' once: a plain listener, without once()'s wrapper per connection. */
  override bindClientDisconnect(client: WebSocket, callback: () => void): void {
    client.on('close', callback);
  }

  override async close(): Promise<void> {}

  override async dispose(): Promise<void> {}
}
