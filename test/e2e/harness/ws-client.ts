import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import WebSocket from 'ws';
import { within } from './wait';

export const PROTOCOL = 'v1.gateway-lattice+json';

export interface ConnectOptions {
  /** Subprotocols offered; default [PROTOCOL]; null offers none. */
  protocols?: string[] | null;
  headers?: Record<string, string | string[]>;
  /** Query string without `?`. */
  query?: string;
  path?: string;
  /** Answer server pings (ws default true); false plays a client that went away without a FIN. */
  autoPong?: boolean;
}

/** A frame as the client saw it. */
export type Frame = [string, Record<string, unknown>, unknown];

/**
 * A real `ws` client with a frame queue: `next()` resolves the next frame or
 * rejects with the frames seen so far; `closed()` resolves the close code.
 */
export class WsClient {
  readonly frames: Frame[] = [];
  /** Pings received from the server. */
  pings = 0;
  private readonly pingWaiters: Array<() => void> = [];
  private readonly queue: Frame[] = [];
  private readonly waiters: Array<(f: Frame) => void> = [];
  private closeInfo: { code: number; reason: string } | null = null;
  private readonly closeWaiters: Array<(c: { code: number; reason: string }) => void> = [];
  /** The subprotocol the server accepted ('' before the handshake completes). */
  get protocol(): string {
    return this.socket.protocol;
  }

  private constructor(readonly socket: WebSocket) {
    socket.on('message', (data: Buffer) => {
      const frame = JSON.parse(data.toString('utf8')) as Frame;
      this.frames.push(frame);
      const waiter = this.waiters.shift();
      if (waiter) waiter(frame);
      else this.queue.push(frame);
    });
    socket.on('close', (code: number, reason: Buffer) => {
      this.closeInfo = { code, reason: reason.toString() };
      for (const w of this.closeWaiters.splice(0)) w(this.closeInfo);
    });
    socket.on('ping', () => {
      this.pings++;
      for (const w of this.pingWaiters.splice(0)) w();
    });
    socket.on('error', () => undefined);
  }

  /** Open a connection; rejects with `{status, body}` when the handshake is refused. */
  static connect(baseUrl: string, options: ConnectOptions = {}): Promise<WsClient> {
    const url = baseUrl + (options.path ?? '/') + (options.query ? '?' + options.query : '');
    const protocols = options.protocols === null ? undefined : (options.protocols ?? [PROTOCOL]);
    const socket = new WebSocket(url, protocols, {
      headers: options.headers as Record<string, string>,
      autoPong: options.autoPong ?? true,
    });
    return within(
      new Promise<WsClient>((resolve, reject) => {
        // The client is created before 'open' so that no early frame is missed.
        const client = new WsClient(socket);
        socket.once('open', () => resolve(client));
        socket.once('unexpected-response', (_req, res: IncomingMessage) => {
          let body = '';
          res.on('data', (c: Buffer) => (body += c.toString()));
          res.on('end', () => reject(new HandshakeRefused(res.statusCode ?? 0, body, res.headers)));
        });
        socket.once('error', (err) => reject(err));
      }),
      `WebSocket handshake with ${url}`,
    );
  }

  /** The next frame, within `ms`. */
  next(ms = 2000): Promise<Frame> {
    const frame = this.queue.shift();
    if (frame) return Promise.resolve(frame);
    const promise = new Promise<Frame>((resolve) => this.waiters.push(resolve));
    const seen = this.frames.length <= 6 ? JSON.stringify(this.frames).slice(0, 500) : this.seenSummary();
    return within(promise, `a frame (seen so far: ${seen})`, ms).catch((err: Error) => {
      this.waiters.shift();
      throw err;
    });
  }

  /** Connect and await `hello`. */
  /** Many frames seen: how many, the first two, and the last three (a missing one shows in the count and the tail). */
  private seenSummary(): string {
    const [first, last] = [this.frames.slice(0, 2), this.frames.slice(-3)];
    return `${this.frames.length} frames, first ${JSON.stringify(first).slice(0, 300)} … last ${JSON.stringify(last).slice(0, 500)}`;
  }

  static async hello(baseUrl: string, options: ConnectOptions = {}): Promise<{ client: WsClient; hello: Frame }> {
    const client = await WsClient.connect(baseUrl, options);
    const hello = await client.next();
    if (hello[0] !== 'hello') throw new Error('expected hello, got ' + JSON.stringify(hello));
    return { client, hello };
  }

  send(value: unknown): void {
    this.socket.send(typeof value === 'string' ? value : JSON.stringify(value));
  }

  /** Send a binary message. */
  sendBinary(data: Buffer): void {
    this.socket.send(data, { binary: true });
  }

  /**
   * Ordering barrier: send a ping and await its pong. The server parses its
   * input in order, so every message sent before has then been received.
   */
  flush(ms = 2000): Promise<void> {
    const pong = new Promise<void>((resolve) => this.socket.once('pong', () => resolve()));
    this.socket.ping();
    return within(pong, 'a pong', ms);
  }

  /** Send a call and await the next frame (calls are answered in order when one at a time). */
  async call(
    method: string,
    meta: Record<string, unknown>,
    args: unknown[] = [],
    kwargs: Record<string, unknown> = {},
  ): Promise<Frame> {
    this.send([method, meta, args, kwargs]);
    return this.next();
  }

  /** Resolves once the server has pinged this client `count` times in all, within `ms`. */
  async untilPings(count: number, ms = 2000): Promise<void> {
    const deadline = Date.now() + ms;
    while (this.pings < count) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out after ${ms} ms waiting for ${count} pings (got ${this.pings})`);
      await within(
        new Promise<void>((resolve) => this.pingWaiters.push(resolve)),
        `${count} pings (got ${this.pings})`,
        left,
      );
    }
  }

  /** Resolves the close code and reason, within `ms`. */
  closed(ms = 2000): Promise<{ code: number; reason: string }> {
    if (this.closeInfo) return Promise.resolve(this.closeInfo);
    return within(new Promise((resolve) => this.closeWaiters.push(resolve)), 'the connection to close', ms);
  }

  /** Close and await the close event. */
  async close(): Promise<void> {
    if (this.closeInfo) return;
    this.socket.close();
    await this.closed().catch(() => this.socket.terminate());
  }
}

export class HandshakeRefused extends Error {
  constructor(
    readonly status: number,
    readonly body: string,
    readonly headers: IncomingHttpHeaders = {},
  ) {
    super(`handshake refused with ${status}: ${body}`);
  }
}
