import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { within } from './wait';

/** One request the fake upstream received. */
export interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: http.IncomingHttpHeaders;
  readonly rawBody: string;
  /** Parsed body (undefined when not JSON). */
  readonly body: unknown;
}

/** How to answer: a reply, or a misbehaviour. */
export type Reply =
  | { status?: number; headers?: Record<string, string | string[]>; json?: unknown; text?: string; delayMs?: number }
  | 'hang'
  | 'destroy';

export type RouteHandler = (req: RecordedRequest) => Reply | Promise<Reply>;

/**
 * A real HTTP server on port 0 playing the upstream backend. Routes are
 * scripted per test; every request is recorded. By default the authorization
 * route answers `{"user_id": <?user= of the query string, or "u1">}` and every
 * other path answers 200 with `{"echo": <kwargs>}`... unless scripted.
 */
export class FakeUpstream {
  readonly requests: RecordedRequest[] = [];
  private readonly routes = new Map<string, RouteHandler>();
  private readonly waiters: Array<{ match: (r: RecordedRequest) => boolean; resolve: (r: RecordedRequest) => void }> =
    [];
  private readonly server = http.createServer((req, res) => this.onRequest(req, res));
  private readonly hanging = new Set<http.ServerResponse>();
  url = '';
  /** TCP connections accepted so far (keep-alive reuse shows as fewer connections than requests). */
  connectionsAccepted = 0;

  static async start(): Promise<FakeUpstream> {
    const fake = new FakeUpstream();
    fake.server.on('connection', () => fake.connectionsAccepted++);
    await new Promise<void>((resolve) => fake.server.listen(0, '127.0.0.1', () => resolve()));
    fake.url = `http://127.0.0.1:${(fake.server.address() as AddressInfo).port}`;
    return fake;
  }

  /** Script `POST /path` (key `'POST /path'`). */
  on(key: string, handler: RouteHandler | Reply): this {
    this.routes.set(key, typeof handler === 'function' ? handler : () => handler);
    return this;
  }

  /** The next recorded request matching `match` (already received ones count), within `ms`. */
  nextRequest(match: (r: RecordedRequest) => boolean = () => true, ms = 2000): Promise<RecordedRequest> {
    const seen = this.requests.find((r) => match(r) && !this.consumed.has(r));
    if (seen) {
      this.consumed.add(seen);
      return Promise.resolve(seen);
    }
    const promise = new Promise<RecordedRequest>((resolve) => this.waiters.push({ match, resolve }));
    return within(promise, 'a request at the fake upstream', ms);
  }

  /** The next request to `path`. */
  requestTo(path: string, ms = 2000): Promise<RecordedRequest> {
    return this.nextRequest((r) => r.path === path, ms);
  }

  async close(): Promise<void> {
    for (const res of this.hanging) res.destroy();
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }

  private readonly consumed = new Set<RecordedRequest>();

  private onRequest(req: http.IncomingMessage, res: http.ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => void this.answer(req, res, Buffer.concat(chunks).toString('utf8')));
  }

  private async answer(req: http.IncomingMessage, res: http.ServerResponse, rawBody: string): Promise<void> {
    let body: unknown;
    try {
      body = JSON.parse(rawBody);
    } catch {
      body = undefined;
    }
    const [path, query] = (req.url ?? '/').split('?');
    const recorded: RecordedRequest = { method: req.method ?? '', path, headers: req.headers, rawBody, body };
    void query;
    this.requests.push(recorded);
    const waiterAt = this.waiters.findIndex((w) => w.match(recorded));
    if (waiterAt >= 0) {
      this.consumed.add(recorded);
      this.waiters.splice(waiterAt, 1)[0].resolve(recorded);
    }
    const handler = this.routes.get(`${recorded.method} ${path}`) ?? defaultRoute;
    const reply = await handler(recorded);
    if (reply === 'hang') return void this.hanging.add(res);
    if (reply === 'destroy') return void req.socket.destroy();
    if (reply.delayMs) await new Promise((resolve) => setTimeout(resolve, reply.delayMs));
    const text = reply.text ?? (reply.json === undefined ? '' : JSON.stringify(reply.json));
    const headers = { 'Content-Type': 'application/json', ...reply.headers };
    res.writeHead(reply.status ?? 200, headers).end(text);
  }
}

function defaultRoute(req: RecordedRequest): Reply {
  if (req.path.endsWith('/gateway/authorize_connection')) {
    const kwargs = (req.body as [unknown, unknown, { url_querystring?: string }])[2];
    const user = new URLSearchParams(kwargs?.url_querystring ?? '').get('user') ?? 'u1';
    return { json: { user_id: user } };
  }
  if (req.path.endsWith('/gateway/session_inactive')) return { status: 204 };
  const [, args, kwargs] = (req.body as [unknown, unknown, unknown]) ?? [];
  return { json: { args, kwargs } };
}
