import * as http from 'node:http';
import WebSocket from 'ws';
import { within } from '../../e2e/harness/wait';

export const PROTOCOL = 'v1.gateway-lattice+json';
export type Frame = [string, Record<string, unknown>, unknown];

/**
 * A lean real `ws` client for load: keeps no frame history. Calls are matched
 * to replies by request_id; every other frame goes to `onFrame`.
 */
export class LoadClient {
  onFrame: (frame: Frame) => void = () => undefined;
  hello: Frame | null = null;
  closeInfo: { code: number; reason: string } | null = null;
  private nextId = 1;
  private readonly pending = new Map<number, (frame: Frame) => void>();
  private readonly closed: Promise<{ code: number; reason: string }>;

  private constructor(readonly socket: WebSocket) {
    socket.on('error', () => undefined);
    this.closed = new Promise((resolve) =>
      socket.once('close', (code: number, reason: Buffer) => {
        this.closeInfo = { code, reason: reason.toString() };
        resolve(this.closeInfo);
      }),
    );
    socket.on('message', (data: Buffer) => {
      const frame = JSON.parse(data.toString('utf8')) as Frame;
      const id = frame[1]?.request_id;
      const waiter = typeof id === 'number' ? this.pending.get(id) : undefined;
      if (waiter !== undefined && (frame[0] === 'result' || frame[0] === 'error')) {
        this.pending.delete(id as number);
        waiter(frame);
      } else this.onFrame(frame);
    });
  }

  /** The connection id the LoadUpstream put in the hello. */
  get cid(): string {
    return String((this.hello?.[2] as { cid?: unknown } | undefined)?.cid ?? '');
  }

  get isOpen(): boolean {
    return this.socket.readyState === WebSocket.OPEN;
  }

  get inFlight(): number {
    return this.pending.size;
  }

  /** Connect and await `hello` within `ms`. */
  static async open(
    url: string,
    query: string,
    options: { headers?: Record<string, string>; ms?: number } = {},
  ): Promise<LoadClient> {
    const socket = new WebSocket(`${url}/?${query}`, [PROTOCOL], {
      headers: options.headers,
      perMessageDeflate: false,
    });
    const client = new LoadClient(socket);
    const hello = new Promise<Frame>((resolve, reject) => {
      client.onFrame = (frame) =>
        frame[0] === 'hello'
          ? resolve(frame)
          : reject(new Error(`expected hello, got ${JSON.stringify(frame).slice(0, 200)}`));
      socket.once('unexpected-response', (_req, res: http.IncomingMessage) =>
        reject(new Error(`handshake refused with ${res.statusCode}`)),
      );
      socket.once('close', (code: number) => reject(new Error(`closed ${code} before hello`)));
      socket.once('error', reject);
    });
    try {
      client.hello = await within(hello, `hello on ${url}`, options.ms ?? 10_000);
    } catch (err) {
      socket.terminate();
      throw err;
    }
    client.onFrame = () => undefined;
    return client;
  }

  /** One call; resolves its reply frame within `ms`. */
  call(method: string, args: unknown[] = [], kwargs: Record<string, unknown> = {}, ms = 10_000): Promise<Frame> {
    const id = this.nextId++;
    const reply = new Promise<Frame>((resolve) => this.pending.set(id, resolve));
    this.socket.send(JSON.stringify([method, { request_id: id }, args, kwargs]));
    return within(reply, `the reply to ${method} #${id}`, ms).finally(() => this.pending.delete(id));
  }

  /** The close code and reason, within `ms`. */
  closedWithin(ms: number): Promise<{ code: number; reason: string }> {
    return within(this.closed, 'the connection to close', ms);
  }

  async close(ms = 5000): Promise<void> {
    if (this.closeInfo !== null) return;
    this.socket.close(1000);
    await this.closedWithin(ms).catch(() => this.socket.terminate());
  }
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

/** One backend API request over a keep-alive agent; resolves the status within `ms`. */
export function api(
  baseUrl: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
  ms = 15_000,
): Promise<number> {
  const url = new URL(baseUrl);
  const text = body === undefined ? undefined : JSON.stringify(body);
  const all: Record<string, string> = { ...headers };
  if (text !== undefined) {
    all['Content-Type'] = 'application/json';
    all['Content-Length'] = String(Buffer.byteLength(text));
  }
  const attempt = (isRetry: boolean): Promise<number> =>
    new Promise<number>((resolve, reject) => {
      const req = http.request({ host: url.hostname, port: url.port, method, path, headers: all, agent }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', (err: NodeJS.ErrnoException) => {
        // Node's documented keep-alive race: the server closed an idle pooled socket just as
        // it was reused, before reading anything of this request. Retried once, on a new socket.
        if (!isRetry && req.reusedSocket && err.code === 'ECONNRESET') attempt(true).then(resolve, reject);
        else reject(err);
      });
      req.end(text);
    });
  return within(attempt(false), `${method} ${path}`, ms);
}

/** Run `task(i)` for i in [0, count) with at most `concurrency` at once. */
export async function pool(count: number, concurrency: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count) await task(next++);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
}

/** A small seeded PRNG (mulberry32), so a failing run can be replayed with RELIABILITY_SEED. */
export function rng(seed: number): {
  next(): number;
  int(n: number): number;
  pick<T>(items: readonly T[]): T;
  chance(p: number): boolean;
} {
  let a = seed >>> 0;
  const next = (): number => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (n) => Math.floor(next() * n),
    pick: (items) => items[Math.floor(next() * items.length)],
    chance: (p) => next() < p,
  };
}

export const SEED = Number(process.env.RELIABILITY_SEED ?? Date.now() % 1_000_000);
