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
  /** The code of the client's close frame (1005 without a code, 1006 when none came); 0 while open. */
  peerCloseCode: number;
}

/** The connection of a socket from our server, inside one of its event listeners (typed `this: WebSocket` by ws). */
export function connectionOf(socket: WebSocket): Connection {
  return (socket as GatewaySocket).connection!;
}

const OPCODE_CLOSE = 0x08;

/** ws internals read here (ws pinned at 8.21.2): the receiver's opcode of the frame being parsed. */
interface WithReceiver {
  _receiver?: { _opcode?: number };
}

/**
 * ws closes by itself, with a bare code and no reason, when a message breaks
 * its receiver checks: over `maxPayload` (1009) or invalid UTF-8 (1007) in a
 * text frame or in a close frame's reason. SPEC §4.1 wants the fatal_error
 * frame and our reason there too, so this subclass adds them, naming the
 * frame that was at fault (issue 11, defect 5). Only ws calls close() without
 * a reason; every close of ours names one.
 */
export function gatewaySocketClass(maxFrameBytes: number): typeof WebSocket {
  const fatalTexts = new Map<number, string>([
    [
      CLOSE_MESSAGE_TOO_BIG,
      encodeFatalError('validation_error', JSON.stringify(`frame exceeds the limit of ${maxFrameBytes} bytes`)),
    ],
    [CLOSE_INVALID_PAYLOAD, encodeFatalError('validation_error', JSON.stringify('invalid UTF-8 in a text frame'))],
  ]);
  const closeReasonFatal = encodeFatalError(
    'validation_error',
    JSON.stringify('invalid UTF-8 in the reason of a close frame'),
  );
  return class extends WebSocket implements GatewaySocket {
    connection: Connection | null = null;
    peerCloseCode = 0;

    /**
     * Two events are read here instead of by listeners of their own, so a
     * socket's listener table holds three event names, not five (issue 33:
     * 'close' with two listeners took an array, and the table grows past
     * three names): a 'close' records the client's code before any listener
     * runs; a 'pong' marks its connection seen (the heartbeat). ws emits at
     * most two arguments on a server's socket.
     */
    override emit(event: string | symbol, first?: unknown, second?: unknown): boolean {
      if (event === 'pong') {
        if (this.connection !== null) this.connection.lastSeenAt = Date.now();
      } else if (event === 'close') {
        this.peerCloseCode = first as number;
      }
      return super.emit(event, first, second);
    }

    override close(code?: number, data?: string | Buffer): void {
      // The receiver still holds the opcode of the frame it refused.
      const isCloseFrameFault =
        code === CLOSE_INVALID_PAYLOAD && (this as unknown as WithReceiver)._receiver?._opcode === OPCODE_CLOSE;
      const fatal = code === undefined ? undefined : isCloseFrameFault ? closeReasonFatal : fatalTexts.get(code);
      if (data === undefined && fatal !== undefined && this.readyState === WebSocket.OPEN) {
        this.send(fatal);
        return super.close(code, REASON_VALIDATION_ERROR);
      }
      super.close(code, data);
    }
  };
}
