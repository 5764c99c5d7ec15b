/**
 * A map from a key to a set of values that keeps a key's one value as itself
 * (pure). The indexes over connections are mostly one-to-one: a user's one
 * connection, a per-user topic's one subscriber, a connection's one topic; a
 * `Set` with its table costs ~150 B per key (issue 33, idle memory). A key
 * with two or more values holds them in a Set, in the order added; back to one,
 * it holds that one as itself again. Values must not themselves be Sets.
 */
export class SetMap<K, V> {
  private readonly map = new Map<K, V | Set<V>>();

  /** Returns true when `value` was not yet under `key`. */
  add(key: K, value: V): boolean {
    const held = this.map.get(key);
    if (held === undefined) {
      this.map.set(key, value);
      return true;
    }
    if (held instanceof Set) {
      if (held.has(value)) return false;
      held.add(value);
      return true;
    }
    if (held === value) return false;
    this.map.set(key, new Set([held, value]));
    return true;
  }

  /** Returns true when `value` was under `key` and is no longer. */
  delete(key: K, value: V): boolean {
    const held = this.map.get(key);
    if (held === undefined) return false;
    if (!(held instanceof Set)) {
      if (held !== value) return false;
      this.map.delete(key);
      return true;
    }
    if (!held.delete(value)) return false;
    if (held.size === 1) this.map.set(key, held.values().next().value!);
    return true;
  }

  /** Whether `key` holds at least one value. */
  has(key: K): boolean {
    return this.map.has(key);
  }

  /** How many values `key` holds. */
  countOf(key: K): number {
    const held = this.map.get(key);
    return held === undefined ? 0 : held instanceof Set ? held.size : 1;
  }

  /** The values of `key` in the order added; undefined when it holds none. Not to be changed while iterated. */
  valuesOf(key: K): Iterable<V> | undefined {
    const held = this.map.get(key);
    if (held === undefined) return undefined;
    return held instanceof Set ? (held as Set<V>) : [held as V];
  }

  /** How many keys hold a value. */
  get size(): number {
    return this.map.size;
  }
}
