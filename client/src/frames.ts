/**
 * The wire format seen from the client (SPEC §3, §4, §6.3, §7, §9): parse
 * what the gateway sends, encode what the client sends. Pure, no I/O.
 */
import type { CallErrorInfo } from './call-error';

/** Subprotocols offered, in order of preference (SPEC §2). */
export const PROTOCOLS: readonly string[] = ['v1.gateway-lattice+json', 'v1.swindon-lattice+json'];

/** The backend's authorization answer, forwarded whole in `hello` (SPEC §3). */
export interface Hello {
  readonly user_id: string;
  readonly [field: string]: unknown;
}

/** The session a hello's meta carries (SPEC §12.1, §12.3): nothing for a legacy connection. */
export interface HelloMeta {
  /** The token and window of a resumable session; null when the gateway gave none. */
  readonly resume: { readonly token: string; readonly windowSeconds: number } | null;
  /** The hello resumed the session the client offered. */
  readonly resumed: boolean;
  /** Topics (dotted) whose missed messages could not be replayed. */
  readonly lost: readonly string[];
  /** How many missed messages follow the resumed hello, before live traffic; null when the gateway did not say. */
  readonly replayed: number | null;
}

/** A message's place in its topic's history (SPEC §12.4): only on resumable connections. */
export interface MessagePosition {
  readonly offset: number;
  readonly epoch: string;
}

/** A call's request id: the client numbers its calls; probes use strings. */
export type RequestId = number | string;

/** Lattice frame data: key → variable → wire value (SPEC §6.3). */
export type LatticeData = Readonly<Record<string, Readonly<Record<string, unknown>>>>;

/** One frame from the gateway, or `unknown` for a shape this client does not know (ignored). */
export type ServerFrame =
  | { readonly type: 'hello'; readonly hello: Hello; readonly meta: HelloMeta }
  /** SPEC §14: `["hello", {"refreshed": true}, <new identity>]`, the authorization refreshed mid-connection. */
  | { readonly type: 'refreshed'; readonly hello: Hello }
  | { readonly type: 'result'; readonly requestId: RequestId; readonly data: unknown }
  | { readonly type: 'error'; readonly requestId: RequestId | null; readonly error: CallErrorInfo }
  | {
      readonly type: 'message';
      readonly topic: string;
      readonly data: unknown;
      readonly position: MessagePosition | null;
    }
  | { readonly type: 'lattice'; readonly namespace: string; readonly data: LatticeData }
  | { readonly type: 'fatal_error'; readonly errorKind: string; readonly status: number | null; readonly data: unknown }
  | { readonly type: 'unknown' };

const UNKNOWN: ServerFrame = { type: 'unknown' };

/**
 * Parse one text frame `[type, meta, data]`. Anything that is not JSON or not
 * that shape, or a known type with a malformed meta, is `unknown`.
 */
export function parseServerFrame(text: string): ServerFrame {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return UNKNOWN;
  }
  if (!Array.isArray(value) || value.length !== 3 || typeof value[0] !== 'string' || !isObject(value[1]))
    return UNKNOWN;
  const [type, meta, data] = value as [string, Record<string, unknown>, unknown];
  switch (type) {
    case 'hello':
      if (!isObject(data) || typeof data.user_id !== 'string') return UNKNOWN;
      if (meta.refreshed === true) return { type: 'refreshed', hello: data as unknown as Hello };
      return { type, hello: data as unknown as Hello, meta: helloMetaOf(meta) };
    case 'result':
      return isRequestId(meta.request_id) ? { type, requestId: meta.request_id, data } : UNKNOWN;
    case 'error':
      return {
        type,
        requestId: isRequestId(meta.request_id) ? meta.request_id : null,
        error: callErrorInfoOf(meta, data),
      };
    case 'message':
      return typeof meta.topic === 'string' ? { type, topic: meta.topic, data, position: positionOf(meta) } : UNKNOWN;
    case 'lattice':
      return typeof meta.namespace === 'string' && isLatticeData(data)
        ? { type, namespace: meta.namespace, data }
        : UNKNOWN;
    case 'fatal_error':
      return {
        type,
        errorKind: String(meta.error_kind),
        status: typeof meta.http_error === 'number' ? meta.http_error : null,
        data,
      };
    default:
      return UNKNOWN;
  }
}

/** A token longer than this is not one a gateway issues (they are 32 characters): ignored. */
const MAX_TOKEN_LENGTH = 512;
const LEGACY_META: HelloMeta = { resume: null, resumed: false, lost: [], replayed: null };

/** SPEC §12.1, §12.3: the hello meta; anything malformed reads as no session. */
function helloMetaOf(meta: Record<string, unknown>): HelloMeta {
  const { resume, resumed, lost, replayed } = meta;
  if (
    !isObject(resume) ||
    typeof resume.token !== 'string' ||
    resume.token === '' ||
    resume.token.length > MAX_TOKEN_LENGTH
  )
    return LEGACY_META;
  const windowSeconds = typeof resume.window === 'number' && resume.window > 0 ? resume.window : 0;
  const lostTopics = Array.isArray(lost) ? lost.filter((topic): topic is string => typeof topic === 'string') : [];
  const replayedCount = Number.isSafeInteger(replayed) && (replayed as number) >= 0 ? (replayed as number) : null;
  return {
    resume: { token: resume.token, windowSeconds },
    resumed: resumed === true,
    lost: lostTopics,
    replayed: replayedCount,
  };
}

/** SPEC §12.4: `offset` (a positive integer) and `epoch` (a non-empty string), or null. */
function positionOf(meta: Record<string, unknown>): MessagePosition | null {
  const { offset, epoch } = meta;
  return Number.isSafeInteger(offset) && (offset as number) >= 0 && typeof epoch === 'string' && epoch !== ''
    ? { offset: offset as number, epoch }
    : null;
}

/** SPEC §4.3: an `error` frame's meta and data as a call error. */
export function callErrorInfoOf(meta: Record<string, unknown>, data: unknown): CallErrorInfo {
  switch (meta.error_kind) {
    case 'validation_error':
      return { kind: 'validation_error', text: String(data) };
    case 'http_error':
      return { kind: 'http_error', status: typeof meta.http_error === 'number' ? meta.http_error : 500, body: data };
    case 'data_error':
      return { kind: 'data_error', text: String(data) };
    default:
      // internal_error, and any kind a newer gateway might add.
      return {
        kind: 'internal_error',
        text: typeof data === 'string' ? data : data === null ? null : JSON.stringify(data),
      };
  }
}

/** Encode a call `[method, meta, args, kwargs]` (SPEC §2.4); `active` is in seconds (SPEC §8). */
export function encodeCall(
  method: string,
  requestId: RequestId,
  args: readonly unknown[],
  kwargs: Readonly<Record<string, unknown>>,
  active?: number,
): string {
  const meta = active === undefined ? { request_id: requestId } : { request_id: requestId, active };
  return JSON.stringify([method, meta, args, kwargs]);
}

/**
 * The liveness probe: a call the gateway answers itself, with no upstream
 * request and no effect on the session (SPEC §4.1: a method starting with
 * `gateway.` is refused with a validation_error before `active` is read).
 */
export const PROBE_METHOD = 'gateway.probe';

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isRequestId(value: unknown): value is RequestId {
  return typeof value === 'number' || typeof value === 'string';
}

function isLatticeData(value: unknown): value is LatticeData {
  return isObject(value) && Object.values(value).every(isObject);
}
