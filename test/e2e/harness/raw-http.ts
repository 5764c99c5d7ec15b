import * as http from 'node:http';
import * as net from 'node:net';
import { within } from './wait';

/** One answer as read off the wire. */
export interface RawHttpResponse {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: Buffer;
}

export interface RawHttpRequest {
  readonly method: string;
  /** Sent as is in the request line (no URL normalisation, unlike fetch). */
  readonly path: string;
  readonly headers?: Record<string, string>;
  /** Written with a Content-Length unless `headers` says `Transfer-Encoding: chunked`. */
  readonly body?: Buffer | string;
  readonly agent?: http.Agent;
}

/**
 * `http.request` to `baseUrl` without fetch's URL normalisation (dot segments,
 * percent-encoding) and with any method, body and headers, bounded by `ms`.
 */
export function rawRequest(baseUrl: string, request: RawHttpRequest, ms = 10_000): Promise<RawHttpResponse> {
  const url = new URL(baseUrl);
  const body =
    request.body === undefined ? undefined : Buffer.isBuffer(request.body) ? request.body : Buffer.from(request.body);
  const headers: Record<string, string> = { ...request.headers };
  const chunked = Object.entries(headers).some(
    ([k, v]) => k.toLowerCase() === 'transfer-encoding' && /chunked/i.test(v),
  );
  if (body !== undefined && !chunked) headers['Content-Length'] = String(body.length);
  const answer = new Promise<RawHttpResponse>((resolve, reject) => {
    const req = http.request(
      { host: url.hostname, port: url.port, method: request.method, path: request.path, headers, agent: request.agent },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
  return within(answer, `the answer to ${request.method} ${request.path.slice(0, 200)}`, ms);
}

/** Write `text` on a fresh TCP connection to `port` and resolve the status code of the first response line. */
export async function rawStatusLine(port: number, text: string | Buffer, ms = 2000): Promise<number> {
  const socket = net.connect(port, '127.0.0.1');
  let received = '';
  const status = new Promise<number>((resolve, reject) => {
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
      const line = /^HTTP\/1\.[01] (\d{3})/.exec(received);
      if (line) resolve(Number(line[1]));
    });
    socket.on('error', reject);
    socket.on('close', () => reject(new Error(`connection closed; received ${JSON.stringify(received)}`)));
  });
  socket.write(text);
  try {
    return await within(status, `a status line in answer to ${JSON.stringify(text.toString('latin1'))}`, ms);
  } finally {
    socket.destroy();
  }
}
