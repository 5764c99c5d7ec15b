import * as http from 'node:http';
import * as net from 'node:net';
import type { AddressInfo } from 'node:net';
import { freePort } from '../../e2e/harness/ports';

/**
 * A lean upstream for load (no request recording): the authorization route
 * answers `{user_id: <?user=…>, cid: <connection_id>, ...authExtra}` so a
 * client learns its connection id from `hello`; `/hang`, `/reset`,
 * `/garbage`, `/status/<n>` and `/slow` misbehave on purpose; every other
 * path echoes `{args, kwargs}` (after `kwargs.delay_ms` when given).
 */
export class LoadUpstream {
  readonly counts = new Map<string, number>();
  authExtra: Record<string, unknown> = {};
  /** Set by a test to answer the authorization with something else. */
  authReply: ((user: string) => { status: number; body: unknown }) | null = null;
  private readonly hanging = new Set<http.ServerResponse>();
  private readonly server: http.Server;
  url = '';

  private constructor(keepAliveMs: number) {
    this.server = http.createServer({ keepAliveTimeout: keepAliveMs }, (req, res) => this.onRequest(req, res));
  }

  /** `keepAliveMs`: how long an idle connection from the gateway is kept open. */
  static async start(keepAliveMs = 60_000): Promise<LoadUpstream> {
    const upstream = new LoadUpstream(keepAliveMs);
    await new Promise<void>((resolve) => upstream.server.listen(0, '127.0.0.1', () => resolve()));
    upstream.url = `http://127.0.0.1:${(upstream.server.address() as AddressInfo).port}`;
    return upstream;
  }

  count(path: string): number {
    return this.counts.get(path) ?? 0;
  }

  async close(): Promise<void> {
    for (const res of this.hanging) res.destroy();
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }

  private onRequest(req: http.IncomingMessage, res: http.ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => this.answer(req, res, Buffer.concat(chunks).toString('utf8')));
  }

  private answer(req: http.IncomingMessage, res: http.ServerResponse, raw: string): void {
    const path = (req.url ?? '/').split('?')[0];
    const key = path.startsWith('/status/') ? '/status' : path;
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
    let body: [Record<string, unknown>, unknown, Record<string, unknown>];
    try {
      body = JSON.parse(raw) as typeof body;
    } catch {
      return void res.writeHead(400).end();
    }
    const json = (status: number, value: unknown): void => {
      const text = JSON.stringify(value);
      res
        .writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) })
        .end(text);
    };
    if (path.endsWith('/gateway/authorize_connection')) {
      const user = new URLSearchParams(String(body[2]?.url_querystring ?? '')).get('user') ?? 'u1';
      if (this.authReply !== null) {
        const reply = this.authReply(user);
        return json(reply.status, reply.body);
      }
      return json(200, { user_id: user, cid: body[0].connection_id, ...this.authExtra });
    }
    if (path.endsWith('/gateway/session_inactive')) return void res.writeHead(204).end();
    switch (path) {
      case '/hang':
        this.hanging.add(res);
        res.once('close', () => this.hanging.delete(res));
        return;
      case '/reset':
        return void req.socket.destroy();
      case '/garbage':
        res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"not": json');
        return;
      default:
        break;
    }
    if (path.startsWith('/status/'))
      return json(Number(path.slice(8)), {
        error: 'scripted',
        ...(body[2]?.echo === undefined ? {} : { echo: body[2].echo }),
      });
    const delay = Number(body[2]?.delay_ms ?? (path === '/slow' ? 300 : 0));
    if (delay > 0) setTimeout(() => json(200, { args: body[1], kwargs: body[2] }), delay);
    else json(200, { args: body[1], kwargs: body[2] });
  }
}

/** A TCP server that answers every connection with bytes that are not HTTP, then closes: the "garbage" upstream. */
export async function junkServer(): Promise<{ url: string; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.once('close', () => sockets.delete(socket));
    socket.once('data', () => socket.end('\x00\xffGARBAGE 999 ???\r\n\r\n{{{'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** A local port nothing listens on: the "down" upstream. */
export async function closedPortUrl(): Promise<string> {
  return `http://127.0.0.1:${await freePort()}`;
}
