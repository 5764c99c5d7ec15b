/**
 * SPEC §15.2 paging, pure: `limit` and the opaque `cursor` of the GET
 * queries, and how the pages of every node make one page. A list is walked
 * node by node (ids in order), each node's items in its own order; a cursor
 * names the node and the offset in that node's list where the next page
 * starts. Items that come or go between two pages may be skipped or listed
 * twice (as with any cursor over live state); nothing else is.
 */

export const DEFAULT_QUERY_LIMIT = 100;
export const MAX_QUERY_LIMIT = 1000;

/** Where a page starts: null = the first page. */
export type PageStart = { readonly node: string; readonly offset: number } | null;

/** One node's slice of a list: how many items it holds, where its slice starts, and the slice. */
export interface NodeSlice<T> {
  readonly count: number;
  readonly start: number;
  readonly items: readonly T[];
}

/** The query parameters, or the 400 they deserve (`error` code and message). */
export type PageParams =
  | { readonly ok: true; readonly limit: number; readonly from: PageStart }
  | { readonly ok: false; readonly error: 'invalid_limit' | 'invalid_cursor'; readonly message: string };

const DIGITS = /^[0-9]{1,4}$/;
/** A node id as NODE_ID allows it, generously (the cursor only has to name one of ours). */
const NODE = /^[A-Za-z0-9_.:-]{1,128}$/;

/** `limit` (1–1000, default 100) and `cursor` of a query string; undefined = absent. */
export function parsePageParams(limit: unknown, cursor: unknown): PageParams {
  let parsedLimit = DEFAULT_QUERY_LIMIT;
  if (limit !== undefined) {
    const n = typeof limit === 'string' && DIGITS.test(limit) ? Number(limit) : NaN;
    if (!(n >= 1 && n <= MAX_QUERY_LIMIT))
      return { ok: false, error: 'invalid_limit', message: `limit: must be an integer from 1 to ${MAX_QUERY_LIMIT}` };
    parsedLimit = n;
  }
  if (cursor === undefined) return { ok: true, limit: parsedLimit, from: null };
  const from = typeof cursor === 'string' ? decodeCursor(cursor) : null;
  if (from === null)
    return {
      ok: false,
      error: 'invalid_cursor',
      message: 'cursor: not a cursor this gateway gave (pass it unchanged)',
    };
  return { ok: true, limit: parsedLimit, from };
}

export function encodeCursor(node: string, offset: number): string {
  return Buffer.from(JSON.stringify([node, offset])).toString('base64url');
}

function decodeCursor(text: string): PageStart {
  if (text.length === 0 || text.length > 256) return null;
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    return null;
  }
  if (!Array.isArray(value) || value.length !== 2) return null;
  const [node, offset] = value as [unknown, unknown];
  if (typeof node !== 'string' || !NODE.test(node)) return null;
  if (typeof offset !== 'number' || !Number.isSafeInteger(offset) || offset < 0) return null;
  return { node, offset };
}

/** Where node `node`'s slice starts for a page starting at `from` (its `count` when the page starts after it). */
export function sliceStart(node: string, count: number, from: PageStart): number {
  if (from === null || node > from.node) return 0;
  return node === from.node ? Math.min(from.offset, count) : count;
}

/** Up to `limit` items of `list` from `start`, walking only as far as needed. */
export function sliceOf<T>(list: Iterable<T>, count: number, start: number, limit: number): NodeSlice<T> {
  const items: T[] = [];
  if (start < count) {
    let i = 0;
    for (const item of list) {
      if (i++ < start) continue;
      items.push(item);
      if (items.length === limit) break;
    }
  }
  return { count, start, items };
}

/**
 * One page from the nodes' slices (by node id): the first `limit` items in
 * node order, and the cursor of the next page, null when nothing follows.
 */
export function mergePage<T>(
  slices: ReadonlyArray<readonly [string, NodeSlice<T>]>,
  limit: number,
): { items: T[]; cursor: string | null } {
  const ordered = [...slices].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const items: T[] = [];
  for (let i = 0; i < ordered.length; i++) {
    const [node, slice] = ordered[i];
    const taken = Math.min(slice.items.length, limit - items.length);
    for (let k = 0; k < taken; k++) items.push(slice.items[k]);
    if (items.length < limit) continue;
    const next = slice.start + taken;
    const isMoreHere = next < slice.count;
    const isMoreLater = ordered.slice(i + 1).some(([, later]) => later.count > later.start);
    return { items, cursor: isMoreHere || isMoreLater ? encodeCursor(node, next) : null };
  }
  return { items, cursor: null };
}
