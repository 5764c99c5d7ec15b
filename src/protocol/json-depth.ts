/**
 * Depth-safe JSON helpers for the frame path (SPEC §4.1 rule 4): nothing here
 * recurses, so a value nested to any depth that JSON.parse accepted can be
 * measured and written back without a RangeError.
 */

/** SPEC §4.1 rule 4: deepest nesting of arrays/objects in a client frame; the frame array itself is level 1. */
export const MAX_FRAME_DEPTH = 128;

/**
 * Whether arrays/objects in `value` nest deeper than `limit` levels, `value`
 * itself being level `level`. Walks with an explicit stack and stops at the
 * first container past the limit; scalars are level 0 and never count.
 */
export function isNestedDeeperThan(value: unknown, limit: number, level = 1): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const pending: object[] = [value];
  const levels: number[] = [level];
  while (pending.length > 0) {
    const container = pending.pop()!;
    const depth = levels.pop()!;
    if (depth > limit) return true;
    const children: unknown[] = Array.isArray(container) ? container : Object.values(container);
    for (const child of children) {
      if (typeof child === 'object' && child !== null) {
        pending.push(child);
        levels.push(depth + 1);
      }
    }
  }
  return false;
}

interface Open {
  readonly container: unknown[] | Record<string, unknown>;
  /** null for an array. */
  readonly keys: string[] | null;
  index: number;
}

/**
 * `JSON.stringify(value)` for a value made of JSON.parse output (plain
 * objects, arrays, strings, finite numbers, booleans, null), with an explicit
 * stack instead of recursion: same text, any depth.
 */
export function stringifyIteratively(value: unknown): string {
  const out: string[] = [];
  const stack: Open[] = [];
  let next: unknown = value;
  for (;;) {
    if (typeof next === 'object' && next !== null) {
      const isArray = Array.isArray(next);
      out.push(isArray ? '[' : '{');
      stack.push({ container: next as Open['container'], keys: isArray ? null : Object.keys(next), index: 0 });
    } else {
      out.push(JSON.stringify(next) ?? 'null');
    }
    for (;;) {
      const top = stack[stack.length - 1];
      if (top === undefined) return out.join('');
      const length = top.keys === null ? (top.container as unknown[]).length : top.keys.length;
      if (top.index < length) {
        if (top.index > 0) out.push(',');
        if (top.keys === null) {
          next = (top.container as unknown[])[top.index];
        } else {
          const key = top.keys[top.index];
          out.push(JSON.stringify(key) + ':');
          next = (top.container as Record<string, unknown>)[key];
        }
        top.index++;
        break;
      }
      out.push(top.keys === null ? ']' : '}');
      stack.pop();
    }
  }
}
