import { Logger } from '@nestjs/common';
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { BackendApiError, badRequest } from './backend-api.error';

/** The /v1 response still being worked on, kept on its socket (a plain field: a WeakMap costs GC time per request). */
const IN_FLIGHT = Symbol('backendApiResponse');
type ApiSocket = Socket & { [IN_FLIGHT]?: ServerResponse | null };

/**
 * `res` answers the last /v1 request parsed on `socket` (a pipelined one
 * included, whose response waits its turn) until `forgetInFlight` (on 'finish';
 * a response closed without finishing leaves a dead socket).
 */
export function trackInFlight(socket: Socket, res: ServerResponse): void {
  (socket as ApiSocket)[IN_FLIGHT] = res;
}

export function forgetInFlight(socket: Socket | null, res: ServerResponse): void {
  if (socket !== null && (socket as ApiSocket)[IN_FLIGHT] === res) (socket as ApiSocket)[IN_FLIGHT] = null;
}

/** A body that was cut off, malformed or abandoned (SPEC §5: a client fault, 400). */
export const incompleteBody = (): BackendApiError => badRequest(INCOMPLETE_BODY, INCOMPLETE_MESSAGE);
const INCOMPLETE_BODY = 'incomplete_body';
const INCOMPLETE_MESSAGE = 'the request was cut off or malformed before the end of its body';

/**
 * Whether an answer can still reach the client through `res`. Its request's
 * socket, not `res.socket`: that is null while the response waits its turn
 * behind earlier ones on a pipelined connection.
 */
export function canAnswer(res: ServerResponse): boolean {
  const socket = res.req.socket;
  return !res.headersSent && !socket.destroyed && socket.writable;
}

/**
 * Node's parser failed (malformed chunking, a half-close before the declared
 * length, the request timeout, …) in the body of the /v1 request in progress
 * on `socket`, not yet answered. SPEC §5: a client fault, answered through that
 * request's own response, so that it is counted with the status actually sent
 * and follows the answers before it on a pipelined connection, then the
 * connection is closed; logged at debug only. False otherwise (a refused head
 * after complete requests, a body of a request already answered): the caller
 * answers on the raw socket (endWithStatus).
 */
export function answerInFlight(socket: Socket, status: number, code: string | undefined): boolean {
  const res = (socket as ApiSocket)[IN_FLIGHT];
  if (res === undefined || res === null || res.req.complete || res.headersSent) return false;
  if (Logger.isLevelEnabled('debug')) Logger.debug({ msg: 'backend API client fault', code, status }, 'BackendApi');
  if (!socket.writable) {
    socket.destroy();
    return true;
  }
  const body =
    status === 400
      ? JSON.stringify({ error: INCOMPLETE_BODY, message: `${INCOMPLETE_MESSAGE} (${code ?? 'parse error'})` })
      : '';
  const headers: Record<string, string> = { Connection: 'close', 'Content-Length': String(Buffer.byteLength(body)) };
  if (body !== '') headers['Content-Type'] = 'application/json; charset=utf-8';
  res.writeHead(status, headers).end(body);
  return true;
}
