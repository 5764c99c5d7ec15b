/**
 * A local mirror of one lattice namespace, merged with the gateway's own CRDT
 * rules: the code of src/lattice/crdt.ts, bundled in, not copied.
 */
import { mergeVariable, validateVariable, variableKind, type VariableValue } from '../../src/lattice/crdt';
import type { LatticeData } from './frames';
import { Listeners } from './listeners';

export type { JsonValue, RegisterValue, VariableValue } from '../../src/lattice/crdt';

/** One key that changed in a merge, and the variables of it that changed (empty: the key just appeared). */
export interface LatticeChange {
  readonly key: string;
  readonly variables: readonly string[];
}

/** A key's variables: name → merged wire value. */
export type LatticeValues = Readonly<Record<string, VariableValue>>;

/**
 * Keys and variables of one namespace (SPEC §6). Snapshots and deltas merge
 * the same way (counter max, set union, register by version), so merging a
 * snapshot after a reconnect into what the mirror holds is safe: nothing
 * regresses, and a key the user no longer sees is kept (CRDTs only grow).
 */
export class LatticeMirror {
  private readonly store = new Map<string, Map<string, VariableValue>>();
  private readonly changed = new Listeners<[changes: readonly LatticeChange[], mirror: LatticeMirror]>();

  /** `namespace` in the client's dotted form, e.g. `rooms` or `team.a`. */
  constructor(readonly namespace: string) {}

  /** The variables of `key` (a fresh object), or undefined when the mirror has no such key. */
  get(key: string): LatticeValues | undefined {
    const variables = this.store.get(key);
    return variables === undefined ? undefined : Object.fromEntries(variables);
  }

  /** The keys seen so far, in the order they first arrived. */
  keys(): string[] {
    return [...this.store.keys()];
  }

  /** A counter's value, 0 when the key or variable is missing. */
  counter(key: string, variable: string): number {
    const value = this.store.get(key)?.get(variable);
    return typeof value === 'number' ? value : 0;
  }

  /** Call `listener` with the changed keys after each merge that changed something; returns the remover. */
  onChange(listener: (changes: readonly LatticeChange[], mirror: LatticeMirror) => void): () => void {
    return this.changed.add(listener);
  }

  /**
   * Merge a `lattice` frame's data (snapshot or delta) and notify listeners.
   * Variables the gateway would have refused (bad name or value) are skipped.
   * Returns what changed.
   */
  merge(data: LatticeData): LatticeChange[] {
    const changes: LatticeChange[] = [];
    for (const [key, incoming] of Object.entries(data)) {
      let variables = this.store.get(key);
      const isNewKey = variables === undefined;
      variables ??= new Map();
      const names: string[] = [];
      for (const [name, value] of Object.entries(incoming)) {
        const kind = variableKind(name);
        if (kind === null || validateVariable(name, value) !== null) continue;
        const outcome = mergeVariable(kind, variables.get(name), value as VariableValue);
        if (outcome.delta === undefined) continue;
        variables.set(name, outcome.value);
        names.push(name);
      }
      if (isNewKey) this.store.set(key, variables);
      if (isNewKey || names.length > 0) changes.push({ key, variables: names });
    }
    if (changes.length > 0) this.changed.emit(changes, this);
    return changes;
  }
}
