/** WebSocket close codes and reasons used by the gateway, in one table (SPEC §2–§4, §9, §10). */

/** Server shutdown (SPEC §10). */
export const CLOSE_GOING_AWAY = 1001;
/** Binary frame received (SPEC §4.1). */
export const CLOSE_UNSUPPORTED_DATA = 1003;
/** Frame is not JSON or has the wrong shape (SPEC §4.1). */
export const CLOSE_INVALID_PAYLOAD = 1007;
/** Slow consumer (SPEC §9). */
export const CLOSE_POLICY_VIOLATION = 1008;
/** Frame over MAX_FRAME_BYTES (SPEC §4.1). */
export const CLOSE_MESSAGE_TOO_BIG = 1009;
/** Unexpected server fault. */
export const CLOSE_INTERNAL_ERROR = 1011;
/** Server draining: a resumable client reconnects at once (SPEC §12.5). */
export const CLOSE_SERVICE_RESTART = 1012;
/** The session was resumed on another socket (SPEC §12.3). */
export const CLOSE_SESSION_RESUMED = 4409;
/** Auth failures close with 4000 + HTTP status (SPEC §3). */
export const CLOSE_BACKEND_ERROR_BASE = 4000;

export const REASON_BACKEND_ERROR = 'backend_error';
export const REASON_SLOW_CONSUMER = 'slow_consumer';
export const REASON_VALIDATION_ERROR = 'validation_error';
export const REASON_SHUTDOWN = 'shutdown';
export const REASON_INTERNAL_ERROR = 'internal_error';
export const REASON_EARLY_FRAMES_OVER_LIMIT = 'early_frames_over_limit';
export const REASON_SERVICE_RESTART = 'service_restart';
export const REASON_SESSION_RESUMED = 'session_resumed';
/** SPEC §14: the authorization's lifetime ended (refused, or not refreshed within the grace); close 4000+S. */
export const REASON_EXPIRED = 'expired';

/** SPEC §3: close code for an authorization failure answered with HTTP `status`. */
export function backendErrorCloseCode(status: number): number {
  return CLOSE_BACKEND_ERROR_BASE + status;
}

/** SPEC §12.6: the backend ended the connection (DELETE /v1/connection/{cid} or /v1/user/{uid}/connections); not resumable. */
export const CLOSE_DISCONNECTED = 4403;
export const REASON_DISCONNECTED = 'disconnected';
