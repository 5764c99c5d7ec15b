import * as http from 'node:http';
import type { Socket } from 'node:net';
import type { ListenerTimeouts } from '../config/gateway-config';

/**
 * What both HTTP listeners share at the socket level (SPEC §1, §5): their
 * timeouts, the status of a request Node's parser gave up on, and the answer
 * to `CONNECT`, which never reaches a route.
 */

/** How often Node looks for requests past their header or request timeout. */
export function connectionsCheckingIntervalMs(timeouts: ListenerTimeouts): number {
  return Math.max(50, Math.min(1000, Math.floor(timeouts.headersMs / 4)));
}

/** The `http.createServer` options for `timeouts`. */
export function listenerServerOptions(timeouts: ListenerTimeouts): http.ServerOptions {
  return {
    headersTimeout: timeouts.headersMs,
    requestTimeout: timeouts.requestMs,
    keepAliveTimeout: timeouts.keepAliveMs,
    connectionsCheckingInterval: connectionsCheckingIntervalMs(timeouts),
  };
}

/**
 * The same timeouts on a server created elsewhere (Nest's). Must run before
 * `listen()`: Node reads the checking interval when the server starts listening.
 */
export function applyListenerTimeouts(server: http.Server, timeouts: ListenerTimeouts): void {
  server.headersTimeout = timeouts.headersMs;
  server.requestTimeout = timeouts.requestMs;
  server.keepAliveTimeout = timeouts.keepAliveMs;
  (server as { connectionsCheckingInterval?: number }).connectionsCheckingInterval =
    connectionsCheckingIntervalMs(timeouts);
}

/** SPEC §5: a verb Node's parser rejects (e.g. `XXX`) and a raw byte outside the URL set are 404, as any unknown route. */
const NOT_FOUND_PARSE_ERRORS = new Set(['HPE_INVALID_METHOD', 'HPE_INVALID_URL']);

/**
 * The status for a request Node's HTTP parser refused (its 'clientError'):
 * 408 when the headers or the whole request took longer than the listener's
 * timeouts (RFC 9110 §15.5.9), 431 for oversized headers, 404 for an unknown
 * verb or raw bytes in the path, else 400.
 */
export function clientErrorStatus(err: NodeJS.ErrnoException): number {
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') return 408;
  if (err.code === 'HPE_HEADER_OVERFLOW') return 431;
  if (NOT_FOUND_PARSE_ERRORS.has(err.code ?? '')) return 404;
  return 400;
}

/** What Node's HTTP server keeps on a connection's socket (internals, read only). */
type HttpSocket = Socket & {
  /** The response being written; the next one queued behind it is assigned when it finishes. */
  _httpMessage?: http.ServerResponse | null;
  /** `incoming`: the last request parsed, until it is answered and read to its end. */
  parser?: { incoming?: http.IncomingMessage | null } | null;
  [REFUSED]?: true;
};
const REFUSED = Symbol('refusedRequest');

/**
 * Whether a raw status line may still be written on `socket`: it is writable
 * and no response on it has sent its head yet (as Node's own clientError
 * handler checks).
 */
export function canAnswerRaw(socket: Socket): boolean {
  const response = (socket as HttpSocket)._httpMessage;
  return socket.writable && (response === undefined || response === null || !response.headersSent);
}

/**
 * Answer `status` (with `text` as a plain-text body, else none) to a request
 * Node's parser refused, and close. On a kept-alive or pipelined connection the
 * requests parsed before it keep their own answers, in order: the status goes
 * out after the last of them. When the refused bytes were the body of a request
 * already answered (an early 404 with broken chunking, a declared body that
 * never came), that answer stands and the connection is only closed: a second
 * status would be read as the answer to the client's next request.
 * Bytes after the refusal change nothing, then destroy the socket once it is closed.
 */
export function endWithStatus(socket: Socket, status: number, text?: string): void {
  const refused = socket as HttpSocket;
  if (refused[REFUSED] === true) return void (socket.writable || socket.destroy());
  refused[REFUSED] = true;
  const incoming = refused.parser?.incoming;
  const answeredBody = incoming !== undefined && incoming !== null && !incoming.complete;
  afterAnswers(refused, () => {
    if (!socket.writable) return; // an answer said Connection: close: Node closes it
    if (answeredBody) return void socket.end();
    socket.end(statusText(status, text));
  });
}

/** Run `then` once no response is being written on `socket` (each finished one may hand it the next). */
function afterAnswers(socket: HttpSocket, then: () => void): void {
  const response = socket._httpMessage;
  if (response === undefined || response === null) return then();
  // Node's own 'finish' listener, registered first, has detached it and assigned the next one by then.
  response.once('finish', () => afterAnswers(socket, then));
}

function statusText(status: number, text: string | undefined): string {
  const line = `HTTP/1.1 ${status} ${http.STATUS_CODES[status] ?? 'Error'}\r\nConnection: close\r\n`;
  if (text === undefined) return line + 'Content-Length: 0\r\n\r\n';
  const body = text + '\n';
  return line + `Content-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

/**
 * SPEC §5: `CONNECT` reaches no route on either listener, so it gets 404 like
 * any unknown path. Without a 'connect' listener Node just closes the socket.
 */
export function answerConnect(_req: http.IncomingMessage, socket: Socket): void {
  socket.on('error', destroyOnError);
  endWithStatus(socket, 404);
}

function destroyOnError(this: Socket): void {
  this.destroy();
}
