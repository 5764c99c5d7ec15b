/**
 * Test doubles for the client's unit specs (not part of the package): a
 * WebSocket the spec drives by hand, frame by frame.
 */
import type { WebSocketLike } from '../websocket-like';

/** A socket whose server side the spec plays: every instance is kept in `all`, the newest is `latest()`. */
export class ScriptedSocket implements WebSocketLike {
  static all: ScriptedSocket[] = [];
  readonly sent: unknown[] = [];
  readonly protocol = 'v1.gateway-lattice+json';
  /** How the client let go of it: a close frame with this code, or terminate(). */
  endedBy: number | 'terminate' | null = null;
  onmessage: WebSocketLike['onmessage'] = null;
  onclose: WebSocketLike['onclose'] = null;
  onerror: WebSocketLike['onerror'] = null;
  private readonly pingListeners: Array<() => void> = [];

  constructor(
    readonly url: string,
    readonly protocols: string[],
  ) {
    ScriptedSocket.all.push(this);
  }

  static latest(): ScriptedSocket {
    return ScriptedSocket.all[ScriptedSocket.all.length - 1];
  }

  send(data: string): void {
    this.sent.push(JSON.parse(data));
  }

  close(code?: number): void {
    this.endedBy = code ?? 1005;
  }

  terminate(): void {
    this.endedBy = 'terminate';
  }

  on(_event: 'ping', listener: () => void): void {
    this.pingListeners.push(listener);
  }

  receive(frame: unknown): void {
    this.onmessage?.({ data: JSON.stringify(frame) });
  }

  hello(userId = 'alice', meta: Record<string, unknown> = {}): void {
    this.receive(['hello', meta, { user_id: userId }]);
  }

  /** The resume offer this socket was opened with, decoded; null when it offered none. */
  offer(): unknown {
    const entry = this.protocols.find((protocol) => protocol.startsWith('gateway-resume.'));
    return entry === undefined
      ? null
      : JSON.parse(Buffer.from(entry.slice('gateway-resume.'.length), 'base64url').toString('utf8'));
  }

  message(topic: string, offset: number, data: unknown, epoch = 'E1'): void {
    this.receive(['message', { topic, offset, epoch }, data]);
  }

  ping(): void {
    for (const listener of this.pingListeners) listener();
  }

  serverClose(code: number, reason = ''): void {
    this.onclose?.({ code, reason });
  }
}

/** The rejection reason of `promise` (an Error when it resolves instead). */
export async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => new Error('expected a rejection'),
    (err: unknown) => err,
  );
}
