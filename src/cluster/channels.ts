/**
 * Redis key and channel names, partitions and the envelopes that cross nodes
 * (SPEC §11, CLUSTER.md "Channels and keys"). Pure: no I/O, no Nest.
 */

/** Fixed partition count: the `{p}` hash tag lets Redis Cluster shard by it later without a rename. */
export const PARTITIONS = 128;

/** What a data channel carries: topic messages, lattice namespace updates, user status changes. */
export type ChannelKind = 't' | 'l' | 'u';

/** Partition of a name: FNV-1a 32-bit of its UTF-16 code units, mod {@link PARTITIONS}. */
export function partitionOf(name: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) {
    hash ^= name.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % PARTITIONS;
}

/** Names under one REDIS_PREFIX. */
export class ClusterNames {
  constructor(readonly prefix: string) {}

  /** `<prefix><kind>:{<p>}:<name>`: the channel of a topic, namespace or user. */
  channel(kind: ChannelKind, name: string): string {
    return `${this.prefix}${kind}:{${partitionOf(name)}}:${name}`;
  }

  /** The node's own channel: commands for its connections, and acks of its requests. */
  node(nodeId: string): string {
    return `${this.prefix}n:${nodeId}`;
  }

  /** Every node listens here: commands that concern connections anywhere (endpoint 8). */
  get everyNode(): string {
    return `${this.prefix}all`;
  }

  /** Every node listens here: the backend's GET queries (SPEC §15.2), beside the node channels. */
  get queries(): string {
    return `${this.prefix}q:all`;
  }

  /** Where the answers to a node's queries come back. */
  queryAnswers(nodeId: string): string {
    return `${this.prefix}q:n:${nodeId}`;
  }

  /** Liveness key of a node (`SET … PX`, refreshed while it lives). */
  alive(nodeId: string): string {
    return `${this.prefix}alive:${nodeId}`;
  }

  /** Set of node ids that have registered (the reaper walks it). */
  get nodes(): string {
    return `${this.prefix}nodes`;
  }

  /** Lease a node takes before it reaps a dead node. */
  reaper(nodeId: string): string {
    return `${this.prefix}reap:${nodeId}`;
  }

  /** Base of a namespace's lattice keys: `<base>:log`, `<base>:meta`, `<base>:snap`. */
  lattice(namespace: string): string {
    return `${this.prefix}lat:{${partitionOf(namespace)}}:${namespace}`;
  }

  /** A topic's history stream (SPEC §12.4): entry ids `<offset>-0`, field `p` = the published JSON. */
  topicHistory(topic: string): string {
    return `${this.prefix}th:{${partitionOf(topic)}}:${topic}`;
  }

  /** A topic's position hash (SPEC §12.4): `o` = last offset, `e` = epoch of the history instance. */
  topicPosition(topic: string): string {
    return `${this.prefix}tp:{${partitionOf(topic)}}:${topic}`;
  }

  /** Per-user presence hash: status, version, identity, per-node connection counts. */
  user(userId: string): string {
    return `${this.prefix}u:{${partitionOf(userId)}}:${userId}`;
  }

  /** Users with connections on a node. */
  nodeUsers(nodeId: string): string {
    return `${this.prefix}nu:${nodeId}`;
  }

  /** Sorted set of user → activity deadline (epoch ms). */
  get deadlines(): string {
    return `${this.prefix}deadlines`;
  }

  /** The highest version of a user that went offline (activity/status-version.ts); resume/'s scripts build it from the prefix too. */
  get statusFloor(): string {
    return `${this.prefix}sv`;
  }

  /**
   * A resumable session's record (SPEC §12.5), a hash; see resume/session-records.ts.
   * The scripts there build this name, and the three below, from the prefix: keep them in step.
   */
  session(connectionId: string): string {
    return `${this.prefix}rs:${connectionId}`;
  }

  /** Token digest → connection id of the session it resumes ('' once the session ended). */
  sessionToken(digest: string): string {
    return `${this.prefix}rt:${digest}`;
  }

  /** Connection ids of the resumable sessions a node holds. */
  nodeSessions(nodeId: string): string {
    return `${this.prefix}rn:${nodeId}`;
  }

  /**
   * The connection ids of a user's resumable sessions that Redis has records
   * of (held, orphaned, or ended and not yet confirmed by their holder), under
   * the user's partition: endpoint 8 and a user-wide disconnect read it
   * instead of every orphan in the cluster (SPEC §12.2).
   */
  userSessions(userId: string): string {
    return `${this.prefix}ru:{${partitionOf(userId)}}:${userId}`;
  }

  /** Sorted set of sessions held by no node (their node drained or died) → window end (epoch ms). */
  get orphanSessions(): string {
    return `${this.prefix}ro`;
  }

  /** A session's resume count in the current 10 s window (SPEC §12.2): INCR, expiring with the window. */
  resumeRate(connectionId: string): string {
    return `${this.prefix}rr:${connectionId}`;
  }
}

const ORIGIN_END = 0x7c; // '|'
/** Node ids are at most 32 characters (SPEC §1), so the separator is within the first 33 bytes. */
const MAX_ORIGIN_BYTES = 33;

/** A data-channel message: `<origin node>|<payload bytes>`; the payload is never decoded on the way. */
export function encodeChannelMessage(originHead: Buffer, payload: Buffer): Buffer {
  return Buffer.concat([originHead, payload], originHead.length + payload.length);
}

/** The `<origin>|` head of this node's channel messages, built once. */
export function originHead(nodeId: string): Buffer {
  return Buffer.from(nodeId + '|', 'latin1');
}

/** Splits a data-channel message; null when it has no origin head (not ours: ignored). */
export function decodeChannelMessage(message: Buffer): { readonly origin: string; readonly payload: Buffer } | null {
  const end = message.subarray(0, MAX_ORIGIN_BYTES).indexOf(ORIGIN_END);
  if (end <= 0) return null;
  return { origin: message.toString('latin1', 0, end), payload: message.subarray(end + 1) };
}

/** One command in a node-channel message: kind, target (connection or user id), data (JSON form), request id. */
export type CommandEnvelope = readonly [kind: string, target: string, data: unknown, requestId: number];

/**
 * A node-channel message: the commands a node sent to one channel in one
 * tick (they travel together, in order), or the acks of some of them; `e`
 * lists those among them that failed on the receiver (answered 503, not 204).
 */
export type NodeMessage =
  | { readonly f: string; readonly c: readonly CommandEnvelope[] }
  | { readonly f: string; readonly a: readonly number[]; readonly e: readonly number[] };

/** Encodes commands from node `from`. */
export function encodeCommands(from: string, commands: readonly CommandEnvelope[]): string {
  return JSON.stringify({ f: from, c: commands });
}

/** Encodes the acks of request ids `ids` by node `from`, `failed` among them (omitted when none). */
export function encodeAcks(from: string, ids: readonly number[], failed: readonly number[] = []): string {
  return JSON.stringify(failed.length === 0 ? { f: from, a: ids } : { f: from, a: ids, e: failed });
}

const isNumber = (value: unknown): value is number => typeof value === 'number';

/** Decodes a node-channel message; null when malformed (ignored, never thrown). */
export function decodeNodeMessage(text: string): NodeMessage | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (value === null || typeof value !== 'object') return null;
  const v = value as Record<string, unknown>;
  if (typeof v.f !== 'string') return null;
  if (Array.isArray(v.a) && v.a.every(isNumber)) {
    // A node of an earlier version sends no `e`: its acks are all successes.
    const failed = Array.isArray(v.e) ? v.e.filter(isNumber) : [];
    return { f: v.f, a: v.a as number[], e: failed };
  }
  if (Array.isArray(v.c) && v.c.every(isCommand)) return { f: v.f, c: v.c as CommandEnvelope[] };
  return null;
}

function isCommand(value: unknown): boolean {
  return (
    Array.isArray(value) &&
    value.length === 4 &&
    typeof value[0] === 'string' &&
    typeof value[1] === 'string' &&
    typeof value[3] === 'number'
  );
}
