import { mergeVariable, variableKind, type VariableValue } from './crdt';
import type { LatticeBody, PrivateEntryUpdate, VariableMap } from './lattice-body';
import { DeadlineQueue } from '../scheduling/deadline-queue';

/** What a client receives for a namespace: key → variable name → value (SPEC §6.3). */
export type LatticeView = { readonly [key: string]: { readonly [name: string]: VariableValue } };

/**
 * The minimal result of one {@link LatticeStore.merge}: only variables whose
 * value changed, each holding its delta (for a `_set` only the added elements).
 */
export interface LatticeDelta {
  /** key → changed shared variables. */
  readonly shared: ReadonlyMap<string, VariableMap>;
  /** user id → key → changed private variables. */
  readonly private: ReadonlyMap<string, ReadonlyMap<string, VariableMap>>;
  /** user id → keys whose private entry this update created (the user gained access). */
  readonly gained: ReadonlyMap<string, ReadonlySet<string>>;
}

type Variables = Map<string, VariableValue>;

interface PrivateEntry {
  readonly variables: Variables;
  /** Epoch ms after which the entry is deleted (`expires_in`); null = never. */
  expiresAt: number | null;
}

interface NamespaceState {
  readonly shared: Map<string, Variables>;
  readonly private: Map<string, Map<string, PrivateEntry>>;
}

/** What a deadline in the queue expires; stale (skipped) once `entry.expiresAt` differs from its time. */
interface ExpiryTarget {
  readonly entry: PrivateEntry;
  readonly namespace: string;
  readonly userId: string;
  readonly key: string;
}

/**
 * The lattices of this node (SPEC §6): namespace → `shared` (key → variables)
 * and `private` (user → key → variables, with an optional expiry deadline).
 * Pure and synchronous; time comes in as `nowMs` (epoch ms). Values handed out
 * are the stored ones: encode them, never mutate them.
 *
 * When a private and a shared variable of one key share a name, the user sees
 * the private one, in snapshots and in deltas alike.
 */
export class LatticeStore {
  private readonly namespaces = new Map<string, NamespaceState>();
  /** Stale deadlines are dropped lazily or by compaction. */
  private readonly expiries = new DeadlineQueue<ExpiryTarget>();
  /** Private entries that currently have a deadline. */
  private liveExpiryCount = 0;

  /** Namespaces currently held. */
  get namespaceCount(): number {
    return this.namespaces.size;
  }

  /** Whether the namespace exists (a merge created it and no drop removed it). */
  hasNamespace(namespace: string): boolean {
    return this.namespaces.has(namespace);
  }

  /**
   * Merges a validated body into the namespace (created if absent) and returns
   * the minimal delta. A private entry that did not exist is created, even
   * `{}`, and recorded in `gained`. `expires_in` sets the entry's deadline to
   * `nowMs + expiresInMs`, replacing an earlier one; without it the deadline
   * is kept.
   */
  merge(namespace: string, body: LatticeBody, nowMs: number): LatticeDelta {
    const state = this.namespaceState(namespace);
    const shared = new Map<string, VariableMap>();
    for (const [key, incoming] of body.shared) {
      if (incoming.size === 0) continue;
      const changed = mergeVariables(getOrCreate(state.shared, key, newVariables), incoming);
      if (changed !== undefined) shared.set(key, changed);
    }
    const changedPrivate = new Map<string, ReadonlyMap<string, VariableMap>>();
    const gained = new Map<string, ReadonlySet<string>>();
    for (const [userId, updates] of body.private) {
      const gainedKeys = new Set<string>();
      const changed = this.mergeUser(namespace, userId, updates, nowMs, gainedKeys);
      if (changed.size > 0) changedPrivate.set(userId, changed);
      if (gainedKeys.size > 0) gained.set(userId, gainedKeys);
    }
    return { shared, private: changedPrivate, gained };
  }

  /**
   * Everything the user sees in the namespace: one object per key it has a
   * private entry for, shared and private variables together (private wins a
   * name clash); a key with no variables is `{}`. `{}` for an unknown
   * namespace or a user without entries.
   */
  snapshotFor(namespace: string, userId: string): LatticeView {
    const state = this.namespaces.get(namespace);
    const entries = state?.private.get(userId);
    if (state === undefined || entries === undefined) return {};
    const view: [string, { [name: string]: VariableValue }][] = [];
    for (const [key, entry] of entries) {
      const shared = state.shared.get(key);
      const variables = shared === undefined ? entry.variables : [...shared, ...entry.variables];
      view.push([key, Object.fromEntries(variables)]);
    }
    return Object.fromEntries(view);
  }

  /**
   * The part of `delta` this user may receive (SPEC §6.3): changed shared
   * variables of keys it has a private entry for (unless shadowed by a private
   * variable of the same name), its own changed private variables, and the
   * full shared values of keys it gained access to (such a key appears even
   * when it has no variables, as `{}`). Null when there is nothing to send.
   * Call it right after the merge that produced `delta`.
   */
  visibleDeltaFor(namespace: string, userId: string, delta: LatticeDelta): LatticeView | null {
    const state = this.namespaces.get(namespace);
    const entries = state?.private.get(userId);
    if (state === undefined || entries === undefined) return null;
    const out = new Map<string, Variables>();
    // Walk the smaller side: many changed keys and few entries, or the reverse.
    for (const key of entries.size < delta.shared.size ? entries.keys() : delta.shared.keys()) {
      const [entry, changed] = [entries.get(key), delta.shared.get(key)];
      if (entry !== undefined && changed !== undefined) addUnshadowed(out, key, changed, entry.variables);
    }
    for (const key of delta.gained.get(userId) ?? []) {
      const entry = entries.get(key);
      if (entry !== undefined) addUnshadowed(out, key, state.shared.get(key) ?? new Map(), entry.variables);
    }
    for (const [key, changed] of delta.private.get(userId) ?? []) {
      if (!entries.has(key)) continue;
      const target = getOrCreate(out, key, newVariables);
      for (const [name, value] of changed) target.set(name, value);
    }
    return out.size === 0 ? null : toView(out);
  }

  /**
   * The whole namespace as one body that `merge(namespace, body, nowMs)`
   * turns back into this state: deadlines become `expiresInMs` relative to
   * `nowMs`, and entries already past their deadline are left out. An empty
   * body for an unknown namespace. Values are the stored ones (encode them).
   */
  exportNamespace(namespace: string, nowMs: number): LatticeBody {
    const state = this.namespaces.get(namespace);
    const shared = new Map<string, VariableMap>();
    const privateMap = new Map<string, Map<string, PrivateEntryUpdate>>();
    if (state === undefined) return { shared, private: privateMap };
    for (const [key, variables] of state.shared) shared.set(key, variables);
    for (const [userId, entries] of state.private) {
      const updates = new Map<string, PrivateEntryUpdate>();
      for (const [key, entry] of entries) {
        if (entry.expiresAt !== null && entry.expiresAt <= nowMs) continue;
        updates.set(key, {
          variables: entry.variables,
          expiresInMs: entry.expiresAt === null ? undefined : entry.expiresAt - nowMs,
        });
      }
      if (updates.size > 0) privateMap.set(userId, updates);
    }
    return { shared, private: privateMap };
  }

  /** Deletes the user's private entries in the namespace (its last connection left). */
  dropUser(namespace: string, userId: string): void {
    const entries = this.namespaces.get(namespace)?.private.get(userId);
    if (entries === undefined) return;
    for (const entry of entries.values()) this.forgetDeadline(entry);
    this.namespaces.get(namespace)?.private.delete(userId);
  }

  /** Deletes the whole namespace (no subscribers left; the backend re-sends state). */
  dropNamespace(namespace: string): void {
    const state = this.namespaces.get(namespace);
    if (state === undefined) return;
    for (const entries of state.private.values()) {
      for (const entry of entries.values()) this.forgetDeadline(entry);
    }
    this.namespaces.delete(namespace);
  }

  /**
   * Deletes every private entry whose deadline is ≤ `nowMs` (SPEC §6.2
   * `expires_in`). No frame is due: clients are not told.
   */
  expire(nowMs: number): void {
    for (const { atMs, key: item } of this.expiries.popDue(nowMs)) {
      if (item.entry.expiresAt !== atMs) continue;
      const entries = this.namespaces.get(item.namespace)?.private.get(item.userId);
      if (entries?.get(item.key) === item.entry) entries.delete(item.key);
      if (entries?.size === 0) this.namespaces.get(item.namespace)?.private.delete(item.userId);
      this.forgetDeadline(item.entry);
    }
  }

  /** The earliest pending deadline (epoch ms), or null: arm one timer for it, then call `expire`. */
  nextExpiryAt(): number | null {
    for (
      let top = this.expiries.peek();
      top !== undefined && top.key.entry.expiresAt !== top.atMs;
      top = this.expiries.peek()
    ) {
      this.expiries.pop();
    }
    return this.expiries.peekAt();
  }

  private namespaceState(namespace: string): NamespaceState {
    return getOrCreate(this.namespaces, namespace, () => ({ shared: new Map(), private: new Map() }));
  }

  private mergeUser(
    namespace: string,
    userId: string,
    updates: ReadonlyMap<string, PrivateEntryUpdate>,
    nowMs: number,
    gainedKeys: Set<string>,
  ): Map<string, VariableMap> {
    const changedKeys = new Map<string, VariableMap>();
    if (updates.size === 0) return changedKeys;
    const entries = getOrCreate(this.namespaceState(namespace).private, userId, () => new Map());
    for (const [key, update] of updates) {
      let entry = entries.get(key);
      if (entry === undefined) {
        entry = { variables: new Map(), expiresAt: null };
        entries.set(key, entry);
        gainedKeys.add(key);
      }
      if (update.expiresInMs !== undefined) {
        this.setDeadline(nowMs + update.expiresInMs, { entry, namespace, userId, key });
      }
      const changed = mergeVariables(entry.variables, update.variables);
      if (changed !== undefined) changedKeys.set(key, changed);
    }
    return changedKeys;
  }

  private setDeadline(atMs: number, target: ExpiryTarget): void {
    if (target.entry.expiresAt === atMs) return;
    if (target.entry.expiresAt === null) this.liveExpiryCount += 1;
    target.entry.expiresAt = atMs;
    this.expiries.push(atMs, target);
    // Refreshed deadlines leave stale items behind; keep the queue O(live entries).
    if (this.expiries.size > 64 + 2 * this.liveExpiryCount) {
      this.expiries.retain((d) => d.key.entry.expiresAt === d.atMs);
    }
  }

  private forgetDeadline(entry: PrivateEntry): void {
    if (entry.expiresAt === null) return;
    entry.expiresAt = null;
    this.liveExpiryCount -= 1;
  }
}

/** Merges variables into `target`; returns name → delta of those that changed, or undefined. */
function mergeVariables(target: Variables, incoming: VariableMap): Variables | undefined {
  let changed: Variables | undefined;
  for (const [name, value] of incoming) {
    const kind = variableKind(name);
    if (kind === null) throw new TypeError(`unvalidated lattice variable name ${JSON.stringify(name)}`);
    const outcome = mergeVariable(kind, target.get(name), value);
    if (outcome.delta === undefined) continue;
    target.set(name, outcome.value);
    (changed ??= new Map()).set(name, outcome.delta);
  }
  return changed;
}

function addUnshadowed(out: Map<string, Variables>, key: string, shared: VariableMap, own: VariableMap): void {
  const target = getOrCreate(out, key, newVariables);
  for (const [name, value] of shared) {
    if (!own.has(name)) target.set(name, value);
  }
}

function toView(variablesByKey: Map<string, Variables>): LatticeView {
  const view: [string, { [name: string]: VariableValue }][] = [];
  for (const [key, variables] of variablesByKey) view.push([key, Object.fromEntries(variables)]);
  return Object.fromEntries(view);
}

function newVariables(): Variables {
  return new Map();
}

function getOrCreate<K, V>(map: Map<K, V>, key: K, create: () => V): V {
  let value = map.get(key);
  if (value === undefined) {
    value = create();
    map.set(key, value);
  }
  return value;
}
