import type { Connection, ConnectionState } from '../connections/connection';
import { NodeSlice, PageStart, sliceOf, sliceStart } from './query-page';

/** SPEC §15.2 `state`: a socket, none (resumable, §12.2), or awaiting authorization. */
export type QueryState = 'attached' | 'detached' | 'connecting';

/** Walks over a topic's subscribers yield to the event loop after this many (a few ms at most). */
export const WALK_CHUNK = 5000;

export function queryStateOf(state: ConnectionState): QueryState | null {
  if (state === 'ready') return 'attached';
  if (state === 'pending') return 'connecting';
  return state === 'detached' ? 'detached' : null;
}

/** One node's part of a paged list query. */
export interface ListArgs {
  readonly from: PageStart;
  readonly limit: number;
}

/** Up to `limit` items of this node's part of a list, mapped by `map`, from where the page starts. */
export function nodeSlice<C, T>(
  nodeId: string,
  list: Iterable<C>,
  count: number,
  { from, limit }: ListArgs,
  map: (item: C) => T,
): NodeSlice<T> {
  const slice = sliceOf(list, count, sliceStart(nodeId, count, from), limit);
  return { count: slice.count, start: slice.start, items: slice.items.map(map) };
}

/** The size of a Set or an array without walking it (what the registry and the index hand out). */
export function sizeOf(list: Iterable<unknown>): number {
  if (list instanceof Set) return list.size;
  return Array.isArray(list) ? list.length : [...list].length;
}

/** A node sends its topic's user ids (so the asker can count each user once) up to this many; beyond, a count. */
export const USER_IDS_MAX = 10_000;

/**
 * Distinct users among a topic's subscribers, walked in chunks of
 * {@link WALK_CHUNK} with a turn of the event loop between them, so a topic
 * with 100k subscribers never holds the loop for more than a few ms.
 */
export async function distinctUsers(subscribers: Iterable<Connection>): Promise<Set<string>> {
  const users = new Set<string>();
  let walked = 0;
  for (const connection of subscribers) {
    const userId = connection.userId;
    if (userId !== null) users.add(userId);
    if (++walked % WALK_CHUNK === 0) await new Promise<void>((resolve) => setImmediate(resolve));
  }
  return users;
}

/**
 * Users over every node: exact (a user subscribed on two nodes counts once)
 * when each node sent its ids, else the sum of the nodes' counts.
 */
export function usersOverNodes(parts: ReadonlyArray<{ users: number; userIds: readonly string[] | null }>): number {
  if (parts.length === 1) return parts[0].users;
  if (parts.some((part) => part.userIds === null)) return parts.reduce((sum, part) => sum + part.users, 0);
  const all = new Set<string>();
  for (const part of parts) for (const userId of part.userIds!) all.add(userId);
  return all.size;
}
