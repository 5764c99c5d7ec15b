/**
 * The three CRDT variable types of a lattice, chosen by name suffix (SPEC §6.2).
 * Plain functions over wire values; no classes, no Nest.
 */

/** Any value `JSON.parse` can return. */
export type JsonValue = null | boolean | number | string | readonly JsonValue[] | { readonly [key: string]: JsonValue };

/** The CRDT type of a variable, named by its suffix. */
export type VariableKind = 'counter' | 'set' | 'register';

/** `_register` wire value: `[version, value]`. */
export type RegisterValue = readonly [version: number, value: JsonValue];

/**
 * A variable's wire value: a counter (number), a set (strings; stored sorted
 * and unique) or a register. The three shapes are disjoint.
 */
export type VariableValue = number | readonly string[] | RegisterValue;

/** What one merge did: the new stored value and what changed (undefined = nothing). */
export interface MergeOutcome {
  readonly value: VariableValue;
  readonly delta: VariableValue | undefined;
}

const VARIABLE_NAME_RE = /^[A-Za-z_][A-Za-z0-9_]*_(counter|set|register)$/;

/** The expected form of a variable name, for error messages. */
export const VARIABLE_NAME_FORM =
  '<name>_counter, <name>_set or <name>_register, <name> matching [A-Za-z_][A-Za-z0-9_]*';

/**
 * The kind named by a variable's suffix, or null when the name is not
 * `^[A-Za-z_][A-Za-z0-9_]*_(counter|set|register)$`.
 */
export function variableKind(name: string): VariableKind | null {
  const match = VARIABLE_NAME_RE.exec(name);
  return match === null ? null : (match[1] as VariableKind);
}

/**
 * Checks one variable of a lattice body. Returns null when valid, otherwise
 * the error text without location (the caller prefixes the path), e.g.
 * `must be a non-negative safe integer`. A register's value is assumed to be
 * JSON (it comes from `JSON.parse`).
 */
export function validateVariable(name: string, value: unknown): string | null {
  const kind = variableKind(name);
  if (kind === null) return `invalid variable name, expected ${VARIABLE_NAME_FORM}`;
  switch (kind) {
    case 'counter':
      return isCounter(value) ? null : 'must be a non-negative safe integer';
    case 'set':
      return isSet(value) ? null : 'must be an array of strings';
    case 'register':
      return registerError(value);
  }
}

/**
 * Merges `incoming` into `current` (undefined = the variable does not exist
 * yet). `current` must be a value this function returned before (sets sorted
 * and unique); `incoming` must have passed {@link validateVariable} for a name
 * of this kind. A variable that did not exist always changes: its delta is the
 * whole (normalised) incoming value, even an empty set.
 * - counter: max; delta = the new value.
 * - set: union, stored sorted (JS string order) and unique; delta = only the
 *   added elements, sorted.
 * - register: higher version wins; on equal versions the greater canonical
 *   JSON wins (SPEC §6.2 [fix]); delta = the new register.
 * Throws a TypeError when a value does not have the kind's shape (a bug).
 */
export function mergeVariable(
  kind: VariableKind,
  current: VariableValue | undefined,
  incoming: VariableValue,
): MergeOutcome {
  switch (kind) {
    case 'counter':
      return mergeCounter(optional(current, asCounter), asCounter(incoming));
    case 'set':
      return mergeSet(optional(current, asSet), asSet(incoming));
    case 'register':
      return mergeRegister(optional(current, asRegister), asRegister(incoming));
  }
}

/**
 * `JSON.stringify` with object keys sorted (JS string order) at every depth:
 * equal JSON values give equal strings.
 */
export function canonicalJson(value: JsonValue): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const members = Object.keys(value)
    .sort()
    .map((key) => `${JSON.stringify(key)}:${canonicalJson(value[key])}`);
  return `{${members.join(',')}}`;
}

/**
 * Orders two registers by the SPEC §6.2 rule: > 0 when `a` wins over `b`,
 * < 0 when `b` wins, 0 when they are the same register.
 */
export function compareRegisters(a: RegisterValue, b: RegisterValue): number {
  if (a[0] !== b[0]) return a[0] > b[0] ? 1 : -1;
  const left = canonicalJson(a[1]);
  const right = canonicalJson(b[1]);
  if (left === right) return 0;
  return left > right ? 1 : -1;
}

function mergeCounter(current: number | undefined, incoming: number): MergeOutcome {
  if (current !== undefined && incoming <= current) return unchanged(current);
  return { value: incoming, delta: incoming };
}

function mergeSet(current: readonly string[] | undefined, incoming: readonly string[]): MergeOutcome {
  if (current === undefined) {
    const value = [...new Set(incoming)].sort();
    return { value, delta: value };
  }
  const present = new Set(current);
  const added = [...new Set(incoming)].filter((item) => !present.has(item));
  if (added.length === 0) return unchanged(current);
  added.sort();
  return { value: mergeSorted(current, added), delta: added };
}

function mergeRegister(current: RegisterValue | undefined, incoming: RegisterValue): MergeOutcome {
  if (current !== undefined && compareRegisters(incoming, current) <= 0) return unchanged(current);
  return { value: incoming, delta: incoming };
}

function unchanged(value: VariableValue): MergeOutcome {
  return { value, delta: undefined };
}

/** Merges two sorted arrays with no common element into one sorted array. */
function mergeSorted(a: readonly string[], b: readonly string[]): string[] {
  const out: string[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) out.push(a[i] < b[j] ? a[i++] : b[j++]);
  while (i < a.length) out.push(a[i++]);
  while (j < b.length) out.push(b[j++]);
  return out;
}

function isCounter(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

function isSet(value: unknown): value is readonly string[] {
  return Array.isArray(value) && value.every((item) => typeof item === 'string');
}

function registerError(value: unknown): string | null {
  if (!Array.isArray(value) || value.length !== 2) return 'must be a [version, value] pair';
  const version: unknown = value[0];
  if (typeof version !== 'number' || !Number.isFinite(version) || version < 0) {
    return 'version must be a finite number >= 0';
  }
  return value[1] === undefined ? 'value must be JSON' : null;
}

function isArray(value: JsonValue): value is readonly JsonValue[] {
  return Array.isArray(value);
}

function optional<T>(value: VariableValue | undefined, as: (value: VariableValue) => T): T | undefined {
  return value === undefined ? undefined : as(value);
}

// The shapes are disjoint, so one cheap look tells a kind/value mix-up (a bug).
function asCounter(value: VariableValue): number {
  if (typeof value === 'number') return value;
  throw new TypeError('counter variable holds a non-counter value');
}

function asSet(value: VariableValue): readonly string[] {
  if (isSetShape(value)) return value;
  throw new TypeError('set variable holds a non-set value');
}

function asRegister(value: VariableValue): RegisterValue {
  if (isRegisterShape(value)) return value;
  throw new TypeError('register variable holds a non-register value');
}

function isSetShape(value: VariableValue): value is readonly string[] {
  return Array.isArray(value) && (value.length === 0 || typeof value[0] === 'string');
}

function isRegisterShape(value: VariableValue): value is RegisterValue {
  return Array.isArray(value) && value.length === 2 && typeof value[0] === 'number';
}
