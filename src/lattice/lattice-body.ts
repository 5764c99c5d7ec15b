import { MAX_DURATION_CHARS, parseDurationMs } from '../config/duration';
import { isValidLatticeKey, isValidUserId } from '../protocol/identifiers';
import { validateVariable, variableKind, type VariableValue } from './crdt';

/** Variable name → value of one key. A Map, so that names like `__proto___set` stay data. */
export type VariableMap = ReadonlyMap<string, VariableValue>;

/** One user's entry for one key in `private`: its variables and optional expiry. */
export interface PrivateEntryUpdate {
  readonly variables: VariableMap;
  /** `expires_in` parsed to a positive whole number of milliseconds; undefined when absent. */
  readonly expiresInMs: number | undefined;
}

/** A validated lattice content body (seed §2.6, SPEC §6.4). Absent sections are empty maps. */
export interface LatticeBody {
  /** key → variables. */
  readonly shared: ReadonlyMap<string, VariableMap>;
  /** user id → key → entry. */
  readonly private: ReadonlyMap<string, ReadonlyMap<string, PrivateEntryUpdate>>;
}

/** Result of {@link parseLatticeBody}: the body, or a "what and where" message. */
export type LatticeBodyResult =
  { readonly ok: true; readonly value: LatticeBody } | { readonly ok: false; readonly message: string };

type JsonObject = { readonly [key: string]: unknown };

const EXPIRES_IN = 'expires_in';
const KEY_FORM = 'key must match [A-Za-z0-9:_.-]{1,256}';
const USER_ID_FORM = 'user id must match [A-Za-z0-9:_/-]{1,256}';
const MAX_SHOWN_CHARS = 64;

/** A private early exit: parseLatticeBody turns it into data and never throws it. */
class BodyError {
  constructor(readonly message: string) {}
}

/**
 * Validates a lattice content body (endpoints 4 and 6, SPEC §6.4) taken from
 * `JSON.parse`. The body must be an object; `shared` and `private` are
 * optional objects; every key, user id, variable name and value is checked;
 * `expires_in` is allowed only inside a private entry and must be a duration
 * string of at most 64 characters that parses strictly, as the configuration's
 * durations do, to at least 1 ms (SPEC §6.2). Unknown
 * top-level keys are ignored. Never throws; on the first problem returns
 * `{ ok: false, message }` with the path first, e.g.
 * `private.user1.room1.last_seen_counter: must be a non-negative safe integer`.
 * Invalid path segments are shown JSON-quoted and cut to 64 characters.
 */
export function parseLatticeBody(body: unknown): LatticeBodyResult {
  try {
    return { ok: true, value: readBody(body) };
  } catch (error) {
    if (error instanceof BodyError) return { ok: false, message: error.message };
    throw error;
  }
}

function readBody(body: unknown): LatticeBody {
  const root = expectObject(body, 'body');
  const shared = root.shared === undefined ? {} : expectObject(root.shared, 'shared');
  const users = root.private === undefined ? {} : expectObject(root.private, 'private');
  return { shared: readShared(shared), private: readPrivate(users) };
}

function readShared(shared: JsonObject): Map<string, VariableMap> {
  const out = new Map<string, VariableMap>();
  for (const [key, raw] of Object.entries(shared)) {
    if (!isValidLatticeKey(key)) fail(`shared.${show(key)}`, KEY_FORM);
    const path = `shared.${key}`;
    const entry = expectObject(raw, path);
    if (Object.hasOwn(entry, EXPIRES_IN)) fail(`${path}.${EXPIRES_IN}`, 'allowed only inside a private entry');
    out.set(key, readVariables(entry, path));
  }
  return out;
}

function readPrivate(users: JsonObject): Map<string, Map<string, PrivateEntryUpdate>> {
  const out = new Map<string, Map<string, PrivateEntryUpdate>>();
  for (const [userId, raw] of Object.entries(users)) {
    if (!isValidUserId(userId)) fail(`private.${show(userId)}`, USER_ID_FORM);
    const keys = expectObject(raw, `private.${userId}`);
    const entries = new Map<string, PrivateEntryUpdate>();
    for (const [key, rawEntry] of Object.entries(keys)) {
      if (!isValidLatticeKey(key)) fail(`private.${userId}.${show(key)}`, KEY_FORM);
      entries.set(key, readPrivateEntry(rawEntry, `private.${userId}.${key}`));
    }
    out.set(userId, entries);
  }
  return out;
}

function readPrivateEntry(raw: unknown, path: string): PrivateEntryUpdate {
  const entry = expectObject(raw, path);
  const { [EXPIRES_IN]: expiresIn, ...variables } = entry;
  const expiresInMs = expiresIn === undefined ? undefined : readDuration(expiresIn, `${path}.${EXPIRES_IN}`);
  return { variables: readVariables(variables, path), expiresInMs };
}

function readVariables(entry: JsonObject, path: string): VariableMap {
  const out = new Map<string, VariableValue>();
  for (const [name, value] of Object.entries(entry)) {
    const error = validateVariable(name, value);
    if (error !== null) fail(`${path}.${variableKind(name) === null ? show(name) : name}`, error);
    out.set(name, value as VariableValue); // validateVariable accepted it
  }
  return out;
}

function readDuration(value: unknown, path: string): number {
  if (typeof value !== 'string') fail(path, 'must be a duration string such as "10s" or "90 minutes"');
  // SPEC §6.2: bounded before it is read.
  if (value.length > MAX_DURATION_CHARS) fail(path, `must be at most ${MAX_DURATION_CHARS} characters`);
  const ms = parseDurationMs(value);
  if (ms === null || ms <= 0) {
    fail(path, `${show(value)} is not a positive duration (examples: "10s", "90 minutes")`);
  }
  return ms;
}

function expectObject(value: unknown, path: string): JsonObject {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) fail(path, 'must be a JSON object');
  return value as JsonObject;
}

function fail(path: string, problem: string): never {
  throw new BodyError(`${path}: ${problem}`);
}

/** A segment as shown in messages: JSON-quoted, cut to 64 characters. */
function show(segment: string): string {
  const cut = segment.length > MAX_SHOWN_CHARS ? `${segment.slice(0, MAX_SHOWN_CHARS)}…` : segment;
  return JSON.stringify(cut);
}
