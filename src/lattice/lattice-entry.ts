import { validateVariable, type VariableValue } from './crdt';
import type { LatticeBody, PrivateEntryUpdate } from './lattice-body';

/**
 * One update of a namespace's log in cluster mode (SPEC §11): a validated
 * body and the time the receiving node took it in, so that `expires_in`
 * becomes the same absolute deadline (`atMs + expiresInMs`) on every node.
 * A namespace's snapshot is an entry too: its whole state at `atMs`.
 */
export interface LatticeEntry {
  readonly atMs: number;
  readonly body: LatticeBody;
}

type Pairs<T> = [string, T][];
type WireEntry = { a: number; s: Pairs<Pairs<VariableValue>>; p: Pairs<Pairs<[Pairs<VariableValue>, number | null]>> };

/**
 * JSON text of an entry. Maps become `[name, value]` pair lists, so names
 * such as `__proto__` stay data; numbers keep JavaScript's exact text.
 */
export function encodeEntry(entry: LatticeEntry): string {
  const wire: WireEntry = {
    a: entry.atMs,
    s: [...entry.body.shared].map(([key, variables]) => [key, [...variables]]),
    p: [...entry.body.private].map(([userId, keys]) => [
      userId,
      [...keys].map(([key, update]) => [key, [[...update.variables], update.expiresInMs ?? null]]),
    ]),
  };
  return JSON.stringify(wire);
}

/**
 * Reads an entry from its parsed JSON (what {@link encodeEntry} wrote).
 * Throws a TypeError naming the problem on anything else; every variable is
 * checked with the CRDT rules, so a bad entry never reaches a merge.
 */
export function decodeEntry(json: unknown): LatticeEntry {
  const wire = json as Partial<WireEntry> | null;
  if (wire === null || typeof wire !== 'object' || typeof wire.a !== 'number')
    throw new TypeError('lattice entry: no time');
  const shared = new Map(pairs(wire.s, 'shared').map(([key, variables]) => [key, readVariables(variables)]));
  const privateMap = new Map(
    pairs(wire.p, 'private').map(([userId, keys]) => [
      userId,
      new Map(
        pairs(keys, 'private entry').map(([key, entry]): [string, PrivateEntryUpdate] => readPrivate(key, entry)),
      ),
    ]),
  );
  return { atMs: wire.a, body: { shared, private: privateMap } };
}

function readPrivate(key: string, entry: unknown): [string, PrivateEntryUpdate] {
  if (!Array.isArray(entry) || entry.length !== 2) throw new TypeError('lattice entry: malformed private entry');
  const expiresInMs: unknown = entry[1];
  if (expiresInMs !== null && typeof expiresInMs !== 'number') throw new TypeError('lattice entry: malformed expiry');
  return [key, { variables: readVariables(entry[0]), expiresInMs: expiresInMs ?? undefined }];
}

function readVariables(list: unknown): Map<string, VariableValue> {
  const variables = new Map<string, VariableValue>();
  for (const [name, value] of pairs(list, 'variables')) {
    const problem = validateVariable(name, value);
    if (problem !== null) throw new TypeError(`lattice entry: variable ${JSON.stringify(name)} ${problem}`);
    variables.set(name, value as VariableValue);
  }
  return variables;
}

function pairs(list: unknown, what: string): [string, unknown][] {
  if (!Array.isArray(list)) throw new TypeError(`lattice entry: ${what} is not a list`);
  for (const pair of list) {
    if (!Array.isArray(pair) || pair.length !== 2 || typeof pair[0] !== 'string')
      throw new TypeError(`lattice entry: malformed ${what}`);
  }
  return list as [string, unknown][];
}
