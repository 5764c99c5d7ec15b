import type * as http from 'node:http';
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
  (server as { connectionsCheckingInterval?: number }).connectionsCheckingInterval = connectionsCheckingIntervalMs(timeouts);
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

/**
 * Whether a raw status line may still be written on `socket`: it is writable
 * and no response on it has sent its head yet (as Node's own clientError
 * handler checks).
 */
export function canAnswerRaw(socket: Socket): boolean {
  const response = (socket as Socket & { _httpMessage?: http.ServerResponse | null })._httpMessage;
  return socket.writable && (response === undefined || response === null || !response.headersSent);
}

/** Write `status` with an empty body and close; destroy when it can no longer be written. */
export function endWithStatus(socket: Socket, status: number): void {
  if (!canAnswerRaw(socket)) return void socket.destroy();
  socket.end(`HTTP/1.1 ${status} ${STATUS_TEXT[status] ?? 'Error'}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
}

const STATUS_TEXT: Record<number, string> = { 400: 'Bad Request', 404: 'Not Found', 408: 'Request Timeout', 431: 'Request Header Fields Too Large' };

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
