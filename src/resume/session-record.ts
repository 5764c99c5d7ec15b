import { TopicPosition } from '../protocol/topic-position';

/*
 * A resumable session's record (SPEC §12.5) as the code sees it: what it
 * keeps, what a takeover gets back, and how a command edits an orphan's.
 * The Redis side is session-records.ts; the seam is session-store.ts.
 */

/** A topic position as a record keeps it: the JSON of `[offset, epoch]` (field `t:<topic>`). */
export function encodeRecordedPosition(position: TopicPosition): string {
  return JSON.stringify([position.offset, position.epoch]);
}

export function decodeRecordedPosition(text: string): TopicPosition {
  const [offset, epoch] = JSON.parse(text) as [number, string | null];
  return { offset, epoch };
}

/** What a session is subscribed to (SPEC §12.2), as the record keeps it. */
export interface SessionSubscriptions {
  /** Topic (path form) → the position at which the session subscribed to it. */
  readonly topics: ReadonlyMap<string, TopicPosition>;
  readonly namespaces: readonly string[];
  /** The `gateway.user` watch list; null when not subscribed. */
  readonly watch: readonly string[] | null;
}

/** Everything a node needs to rebuild a session it takes over (SPEC §12.3, §12.5). */
export interface SessionRecord extends SessionSubscriptions {
  readonly connectionId: string;
  readonly userId: string;
  /** Compact JSON of the original authorization response. */
  readonly authJson: string;
  readonly handlerName: string;
  /** The session's generation after this takeover: a node drops its copy only for a newer one. */
  readonly generation: number;
  /** The user's activity deadline in Redis (epoch ms; 0 when unknown). */
  readonly deadlineAt: number;
  /** The node that held it before ('' when none did: its node drained or died). */
  readonly previousHolder: string;
  /** SPEC §14: epoch ms at which its authorization ends; 0 = never. */
  readonly authEndsAt: number;
}

/** A record's identity part, written when the session starts (and after a Redis reconnection). */
export interface SessionStart {
  readonly connectionId: string;
  readonly digest: string;
  readonly userId: string;
  readonly authJson: string;
  readonly handlerName: string;
  /** 0 while attached. */
  readonly windowEndAt: number;
  /** SPEC §14: epoch ms at which its authorization ends; 0 or absent = never. */
  readonly authEndsAt?: number;
}

export type TakeoverResult =
  | { readonly ok: true; readonly record: SessionRecord }
  | { readonly ok: false; readonly result: 'expired' | 'invalid' };

/** The record's hash fields of a session's parts: one per topic and namespace, and its watch list. */
export const RecordField = {
  topic: (topic: string): string => 't:' + topic,
  namespace: (namespace: string): string => 'l:' + namespace,
  watch: 'wu',
} as const;

/** An edit of an orphaned session's record: its subscriptions, or its end (DELETE /v1/connection). */
export type OrphanEdit =
  | { readonly op: 'set'; readonly field: string; readonly value: string }
  /** Set only when absent (a subscription already there keeps where it began). */
  | { readonly op: 'add'; readonly field: string; readonly value: string }
  | { readonly op: 'del'; readonly field: string }
  | { readonly op: 'watch'; readonly users: readonly string[] }
  | { readonly op: 'end' };

/** A session held by no node, as its record has it (topics and namespaces in path form). */
export interface OrphanedSession {
  readonly connectionId: string;
  readonly userId: string;
  readonly topics: string[];
  readonly namespaces: string[];
  readonly isWatching: boolean;
}

/** A session this node holds, as the writer sees it. */
export interface HeldSession {
  readonly connectionId: string;
  readonly userId: string;
  readonly digest: string;
  readonly isDetached: boolean;
}
