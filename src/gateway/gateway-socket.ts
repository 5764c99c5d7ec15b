import { WebSocket } from 'ws';
import type { Connection } from '../connections/connection';
import { CLOSE_INVALID_PAYLOAD, CLOSE_MESSAGE_TOO_BIG, REASON_VALIDATION_ERROR } from '../protocol/close-codes';
import { encodeFatalError } from '../protocol/frames';

/**
 * The WebSocket class ws builds for our clients. `connection` points back to
 * the Connection that owns the socket (set once it is registered), so socket
 * event listeners can be shared functions that read `this.connection`
 * instead of one closure per connection.
 */
export interface GatewaySocket extends WebSocket {
  connection: Connection | null;
}

/** The connection of a socket from our server, inside one of its event listeners (typed `this: WebSocket` by ws). */
export function connectionOf(socket: WebSocket): Connection {
  return (socket as GatewaySocket).connection!;
}

/**
 * ws closes by itself, with a bare code and no reason, when a message breaks
 * its receiver checks: over `maxPayload` (1009) or invalid UTF-8 in a text
 * frame (1007). SPEC §4.1 wants the fatal_error frame and our reason there
 * too, so this subclass adds them. Only ws calls close() without a reason;
 * every close of ours names one.
 */
export function gatewaySocketClass(maxFrameBytes: number): typeof WebSocket {
  const fatalTexts = new Map<number, string>([
    [CLOSE_MESSAGE_TOO_BIG, encodeFatalError('validation_error', JSON.stringify(`frame exceeds the limit of ${maxFrameBytes} bytes`))],
    [CLOSE_INVALID_PAYLOAD, encodeFatalError('validation_error', JSON.stringify('invalid UTF-8 in a text frame'))],
  ]);
  return class extends WebSocket implements GatewaySocket {
    connection: Connection | null = null;

    override close(code?: number, data?: string | Buffer): void {
      const fatal = code === undefined ? undefined : fatalTexts.get(code);
      if (data === undefined && fatal !== undefined && this.readyState === WebSocket.OPEN) {
        this.send(fatal);
        return super.close(code, REASON_VALIDATION_ERROR);
      }
      super.close(code, data);
    }
  };
}
