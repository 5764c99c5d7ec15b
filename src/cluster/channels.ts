/**
 * Redis key and channel names, partitions and the envelopes that cross nodes
 * (SPEC §11, CLUSTER.md "Channels and keys"). Pure: no I/O, no Nest.
 */
import { TAGGED_PARTITIONS, partitionTag } from './partition-tags';

/** Fixed partition count: each partition's hash tag (partition-tags.ts) lets Redis Cluster shard by it. */
export const PARTITIONS = TAGGED_PARTITIONS;

/** What a data channel carries: topic messages, lattice namespace updates, user status changes. */
export type ChannelKind = 't' | 'l' | 'u';

/** The `{tag}` of the partition of `name` (partition-tags.ts: tags spread evenly over a Redis Cluster's slots). */
function tagOf(name: string): string {
  return partitionTag(partitionOf(name));
}

/** Partition of a name: FNV-1a 32-bit of its UTF-16 code units, mod {@link PARTITIONS}. */
export function partitionOf(name: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) {
    hash ^= name.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % PARTITIONS;
}

/**
 * The hash tag of the control keys and channels (node registry, liveness,
 * node channels): one tag, so that on a Redis Cluster they share one slot
 * and a pipeline or script may take several of them (SPEC §13.3, §13.5).
 */
export const CONTROL_TAG = 'ctl';

/** Names under one REDIS_PREFIX. */
export class ClusterNames {
  /** `<prefix>{ctl}:`: the head of every control key and channel. */
  private readonly control: string;

  constructor(readonly prefix: string) {
    this.control = `${prefix}{${CONTROL_TAG}}:`;
  }

  /** `<prefix><kind>:{<p>}:<name>`: the channel of a topic, namespace or user. */
  channel(kind: ChannelKind, name: string): string {
    return `${this.prefix}${kind}:{${tagOf(name)}}:${name}`;
  }

  /** The node's own channel: commands for its connections, and acks of its requests. */
  node(nodeId: string): string {
    return `${this.control}n:${nodeId}`;
  }

  /** Every node listens here: commands that concern connections anywhere (endpoint 8). */
  get everyNode(): string {
    return `${this.control}all`;
  }

  /** Every node listens here: the backend's GET queries (SPEC §15.2), beside the node channels. */
  get queries(): string {
    return `${this.control}q:all`;
  }

  /** Where the answers to a node's queries come back. */
  queryAnswers(nodeId: string): string {
    return `${this.control}q:n:${nodeId}`;
  }

  /** Liveness key of a node (`SET … PX`, refreshed while it lives). */
  alive(nodeId: string): string {
    return `${this.control}alive:${nodeId}`;
  }

  /** Set of node ids that have registered (the reaper walks it). */
  get nodes(): string {
    return `${this.control}nodes`;
  }

  /** The shards (REDIS_SHARDS, SPEC §13.4) every node must list: JSON of their addresses, in order. */
  get shardList(): string {
    return `${this.control}shards`;
  }

  /**
   * Set of dead or drained node ids whose reaping is not finished: some
   * partitions could not be reached then (a shard down, SPEC §13.4); any
   * node finishes them once Redis answers there again.
   */
  get unreaped(): string {
    return `${this.control}unreaped`;
  }

  /** Lease a node takes before it reaps a dead node. */
  reaper(nodeId: string): string {
    return `${this.control}reap:${nodeId}`;
  }

  /** Base of a namespace's lattice keys: `<base>:log`, `<base>:meta`, `<base>:snap`. */
  lattice(namespace: string): string {
    return `${this.prefix}lat:{${tagOf(namespace)}}:${namespace}`;
  }

  /** A topic's history stream (SPEC §12.4): entry ids `<offset>-0`, field `p` = the published JSON. */
  topicHistory(topic: string): string {
    return `${this.prefix}th:{${tagOf(topic)}}:${topic}`;
  }

  /** A topic's position hash (SPEC §12.4): `o` = last offset, `e` = epoch of the history instance. */
  topicPosition(topic: string): string {
    return `${this.prefix}tp:{${tagOf(topic)}}:${topic}`;
  }

  /** Per-user presence hash: status, version, identity, per-node connection counts (the user's channel's name too). */
  user(userId: string): string {
    return `${this.prefix}u:{${tagOf(userId)}}:${userId}`;
  }

  /** The users of partition `partition` with connections on a node. */
  nodeUsers(partition: number, nodeId: string): string {
    return `${this.prefix}nu:{${partitionTag(partition)}}:${nodeId}`;
  }

  /** Sorted set of the partition's user keys → activity deadline (epoch ms). */
  deadlines(partition: number): string {
    return `${this.prefix}dl:{${partitionTag(partition)}}`;
  }

  /** The highest version of a user of the partition that went offline (activity/status-version.ts). */
  statusFloor(partition: number): string {
    return `${this.prefix}sv:{${partitionTag(partition)}}`;
  }

  /**
   * A resumable session's record (SPEC §12.5), a hash; see resume/session-records.ts.
   * Everything of a session lives in its user's partition, beside the user's presence hash,
   * so that one script can take it over, end it or revoke it (SPEC §13.3).
   */
  session(userId: string, connectionId: string): string {
    return `${this.prefix}rs:{${tagOf(userId)}}:${connectionId}`;
  }

  /** Token digest → connection id of the session it resumes. */
  sessionToken(userId: string, digest: string): string {
    return `${this.prefix}rt:{${tagOf(userId)}}:${digest}`;
  }

  /** Digests of the partition's tokens whose session ended lately → until when a resume with one says `expired`. */
  endedTokens(partition: number): string {
    return `${this.prefix}re:{${partitionTag(partition)}}`;
  }

  /**
   * Connection id → user id of a resumable session, under the connection id's
   * partition: how a resume or a /v1 command that names only the connection
   * finds the partition of its record (one read).
   */
  sessionUser(connectionId: string): string {
    return `${this.prefix}ri:{${tagOf(connectionId)}}:${connectionId}`;
  }

  /** The sessions of partition `partition` a node holds; members are {@link sessionMember}s. */
  nodeSessions(partition: number, nodeId: string): string {
    return `${this.prefix}rn:{${partitionTag(partition)}}:${nodeId}`;
  }

  /**
   * The connection ids of a user's resumable sessions that Redis has records
   * of (held, orphaned, or ended and not yet confirmed by their holder), under
   * the user's partition: endpoint 8 and a user-wide disconnect read it
   * instead of every orphan in the cluster (SPEC §12.2).
   */
  userSessions(userId: string): string {
    return `${this.prefix}ru:{${tagOf(userId)}}:${userId}`;
  }

  /** Sorted set of the partition's sessions held by no node (their node drained or died) → window end (epoch ms). */
  orphanSessions(partition: number): string {
    return `${this.prefix}ro:{${partitionTag(partition)}}`;
  }

  /** A session's resume count in the current 10 s window (SPEC §12.2): INCR, expiring with the window. */
  resumeRate(connectionId: string): string {
    return `${this.prefix}rr:{${tagOf(connectionId)}}:${connectionId}`;
  }
}

/**
 * A session as a member of the per-partition sets of sessions (a node's, the
 * orphans): `<connection id>|<user id>`, so a walk of the set can name the
 * keys of each session's user without reading its record first.
 */
export function sessionMember(connectionId: string, userId: string): string {
  return `${connectionId}|${userId}`;
}

/** The connection and user ids of a {@link sessionMember} (connection ids hold no `|`). */
export function parseSessionMember(member: string): { readonly connectionId: string; readonly userId: string } {
  const end = member.indexOf('|');
  return { connectionId: member.slice(0, end), userId: member.slice(end + 1) };
}

/** Every partition number, 0 … {@link PARTITIONS} − 1: what a walk over a per-partition key visits. */
export const EVERY_PARTITION: readonly number[] = Array.from({ length: PARTITIONS }, (_, partition) => partition);

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
