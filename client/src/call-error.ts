import type { FatalError } from './fatal-error';

/**
 * Why a call failed: the gateway's `error` frame kinds (SPEC §4.3) and the
 * client's own outcomes. A discriminated union on `kind`.
 */
export type CallErrorInfo =
  /** The gateway refused the frame (SPEC §4.1), e.g. "invalid method". */
  | { readonly kind: 'validation_error'; readonly text: string }
  /** The backend answered `status` (500 also for timeouts and unreachable backends); `body` is its JSON or null. */
  | { readonly kind: 'http_error'; readonly status: number; readonly body: unknown }
  /** The backend answered 200 with JSON that does not parse; `text` is the parser's message. */
  | { readonly kind: 'data_error'; readonly text: string }
  /** The gateway could not run the call, e.g. `too_many_requests` when the destination's queue is full. */
  | { readonly kind: 'internal_error'; readonly text: string | null }
  /** No reply within the call's `timeoutMs` (time spent waiting for a connection included). */
  | { readonly kind: 'timeout'; readonly timeoutMs: number }
  /** The call's AbortSignal fired; `reason` is the signal's reason. */
  | { readonly kind: 'aborted'; readonly reason: unknown }
  /**
   * The connection closed before the reply. `sent` tells whether the call had
   * left the client (then the backend may have run it); `fatal` is set when the
   * gateway ended the connection with a fatal_error.
   */
  | { readonly kind: 'connection_lost'; readonly sent: boolean; readonly fatal: FatalError | null };

/** The kinds of {@link CallErrorInfo}. */
export type CallErrorKind = CallErrorInfo['kind'];

/** A rejected call: an Error carrying the call's method and the union's fields (narrow on `kind`). */
export type CallError = Error & CallErrorInfo & { readonly name: 'CallError'; readonly method: string };

/** Build the Error a call rejects with. */
export function callError(method: string, info: CallErrorInfo): CallError {
  const error = new Error(`${method}: ${describe(info)}`);
  return Object.assign(error, info, { name: 'CallError' as const, method });
}

/** True for errors made by {@link callError}. */
export function isCallError(value: unknown): value is CallError {
  return value instanceof Error && value.name === 'CallError' && typeof (value as { kind?: unknown }).kind === 'string';
}

function describe(info: CallErrorInfo): string {
  switch (info.kind) {
    case 'validation_error':
    case 'data_error':
      return `${info.kind}: ${info.text}`;
    case 'internal_error':
      return `internal_error: ${info.text ?? 'null'}`;
    case 'http_error':
      return `http_error ${info.status}`;
    case 'timeout':
      return `no reply within ${info.timeoutMs} ms`;
    case 'aborted':
      return 'aborted';
    case 'connection_lost':
      return info.sent ? 'connection lost before the reply' : 'connection lost before the call was sent';
  }
}
