/**
 * Identifier rules of seed §2.5/§4.4 and SPEC §4.1, §5, §6.1, compiled once.
 * Every checker takes `unknown` and returns a boolean; none throws.
 */

const METHOD_RE = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;
const STRING_REQUEST_ID_RE = /^[A-Za-z0-9_-]{1,36}$/;
const TOPIC_RE = /^[A-Za-z0-9:_/-]+$/;
const NAMESPACE_RE = /^[A-Za-z0-9_/-]+$/;
const USER_ID_RE = /^[A-Za-z0-9:_/-]{1,256}$/;
const CONNECTION_ID_RE = /^[A-Za-z0-9_-]{1,64}$/;
const LATTICE_KEY_RE = /^[A-Za-z0-9:_.-]{1,256}$/;
/** SPEC §4.1: `gateway.` in any letter case (a backend may route without regard to case). */
const RESERVED_METHOD_RE = /^gateway\./i;
/** SPEC §5: topics and namespaces are at most 256 characters, as user ids and lattice keys are. */
export const MAX_PATH_NAME_CHARS = 256;
const SLASHES = /\//g;

/** The method prefix reserved for the gateway's own upstream calls (SPEC §4.1). */
export const RESERVED_METHOD_PREFIX = 'gateway.';
/** Lattice namespaces reserved on the server side (seed §2.6). */
export const RESERVED_NAMESPACE_PREFIX = 'gateway/';

/** A client-callable method: dotted name, not under `gateway.` in any letter case. */
export function isValidMethod(method: string): boolean {
  return METHOD_RE.test(method) && !RESERVED_METHOD_RE.test(method);
}

/** Any dotted method name, reserved ones included (routing patterns, gateway calls). */
export function isMethodName(method: string): boolean {
  return METHOD_RE.test(method);
}

/** SPEC §4.1: a non-negative safe integer, or a string of 1–36 `[A-Za-z0-9_-]`. */
export function isValidRequestId(value: unknown): boolean {
  if (typeof value === 'number') return Number.isSafeInteger(value) && value >= 0;
  return typeof value === 'string' && STRING_REQUEST_ID_RE.test(value);
}

/** Topic path: 1–256 chars of `a-zA-Z0-9:_/-`, no empty `/` parts. */
export function isValidTopic(topic: string): boolean {
  return topic.length <= MAX_PATH_NAME_CHARS && TOPIC_RE.test(topic) && hasNoEmptySegment(topic);
}

/** Lattice namespace path: 1–256 chars of `a-zA-Z0-9_/-`, no empty `/` parts. */
export function isValidNamespace(namespace: string): boolean {
  return namespace.length <= MAX_PATH_NAME_CHARS && NAMESPACE_RE.test(namespace) && hasNoEmptySegment(namespace);
}

/** User id: 1–256 chars of `a-zA-Z0-9:_/-`. */
export function isValidUserId(value: unknown): value is string {
  return typeof value === 'string' && USER_ID_RE.test(value);
}

/** Path conn_id is well-formed: `[A-Za-z0-9_-]{1,64}` (SPEC §5). */
export function isWellFormedConnectionId(value: string): boolean {
  return CONNECTION_ID_RE.test(value);
}

/** Lattice key: `[A-Za-z0-9:_.-]{1,256}` (SPEC §6.1). */
export function isValidLatticeKey(value: string): boolean {
  return LATTICE_KEY_RE.test(value);
}

/** `a/b` → `a.b`: how topics and namespaces reach clients (seed §4.2). */
export function pathToWire(path: string): string {
  return path.replace(SLASHES, '.');
}

/** `rooms.history` → `/rooms/history` (seed §4.1). */
export function methodToPath(method: string): string {
  return '/' + method.replace(/\./g, '/');
}

function hasNoEmptySegment(path: string): boolean {
  return !path.startsWith('/') && !path.endsWith('/') && !path.includes('//');
}
