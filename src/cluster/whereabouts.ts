/**
 * Where a resumable session is, as its record in Redis says (SPEC §12.5):
 * held by a node; orphaned (held by none: its node drained or died, and the
 * record waits for a resume or its window's end); or gone (no record: it
 * ended, it never was resumable, or the id is unknown).
 */
export type Whereabouts = HeldBy | { readonly kind: 'orphaned' } | { readonly kind: 'gone' };

export interface HeldBy {
  readonly kind: 'held';
  readonly node: string;
}

export const ORPHANED: Whereabouts = { kind: 'orphaned' };
export const GONE: Whereabouts = { kind: 'gone' };

export function heldBy(node: string): HeldBy {
  return { kind: 'held', node };
}

/** The record's holder field `n` as Redis answers it: '' orphaned, absent gone. */
export function whereaboutsOf(holderField: string | null | undefined | false): Whereabouts {
  if (holderField === null || holderField === undefined || holderField === false) return GONE;
  return holderField === '' ? ORPHANED : heldBy(holderField);
}

/**
 * A command applied to this node's copy of a session that another node took
 * over meanwhile (its takeover notice still on its way): the record refused
 * the write, and the command goes on to `node`, so a 204 still means "in
 * effect where the session lives" (SPEC §12.5).
 */
export interface Moved {
  readonly kind: 'moved';
  readonly node: string;
}

export function movedTo(node: string): Moved {
  return { kind: 'moved', node };
}

/** A command handler's result: undefined, or the session's move. */
export function isMoved(result: unknown): result is Moved {
  return typeof result === 'object' && result !== null && (result as Moved).kind === 'moved';
}

/** A command for a connection applied here: in effect once resolved, unless it resolves to the session's {@link Moved}. */
export type Applied = Promise<void | Moved | undefined>;
