/**
 * The gateway refused or ended the connection with a `fatal_error` frame
 * (SPEC §3: `["fatal_error", {"error_kind": "http_error", "http_error": S}, D]`
 * then close code 4000+S; SPEC §4.1: `validation_error` then 1007/1003/1009).
 */
export class FatalError extends Error {
  override readonly name = 'FatalError';

  constructor(
    /** The WebSocket close code, e.g. 4401 (4000 + the backend's status). */
    readonly code: number,
    /** The frame's `error_kind`: `http_error` or `validation_error`. */
    readonly errorKind: string,
    /** For `http_error`: the status the backend answered the authorization with (S). */
    readonly status: number | null,
    /** The frame's data: the backend's JSON body, the validation text, or null. */
    readonly data: unknown,
  ) {
    super(`gateway closed the connection with ${code} (${errorKind}${status === null ? '' : ' ' + status})`);
  }
}

/** Close codes after which the client does not reconnect by itself: the backend refused the user. */
export const NO_RETRY_CLOSE_CODES: readonly number[] = [4401, 4403];

/** The default retry policy: retry every fatal error except 4401 and 4403. */
export function isRetryableFatal(error: FatalError): boolean {
  return !NO_RETRY_CLOSE_CODES.includes(error.code);
}

/**
 * Close codes without a fatal_error after which the client stops: the backend
 * ended the session (4403 `disconnected`, SPEC §12.6), another socket resumed
 * it (4409 `session_resumed`, SPEC §12.3).
 */
export const STOP_CLOSE_CODES: readonly number[] = [4403, 4409];

/** The gateway is restarting (SPEC §12.5): reconnect at once, after a jitter below this, not a backoff. */
export const CLOSE_SERVICE_RESTART = 1012;
export const RESTART_JITTER_MS = 1000;

/**
 * SPEC §14: the close reason of a session whose authorization expired (its
 * refresh was refused or kept failing). The session is over: the client
 * reconnects once, without a resume offer, and never in a loop.
 */
export const REASON_EXPIRED = 'expired';
