import { randomBytes } from 'node:crypto';
import { ClusterNames, originHead, partitionOf } from '../cluster/channels';
import { ClusterUnavailableError } from '../cluster/cluster-unavailable.error';
import { RedisShards } from '../cluster/redis-shards';
import type { KeptHistory } from './topic-history';
import { TopicPosition } from '../protocol/topic-position';

/** A publish as the history numbers it (SPEC §12.4): its position and the published JSON bytes. */
export interface LoggedMessage extends TopicPosition<string> {
  readonly payload: Buffer;
}

/** What Redis holds for a topic: its position, and the messages of a requested range that are still kept. */
export interface TopicLogRead extends TopicPosition<string> {
  readonly messages: LoggedMessage[];
}

/**
 * Where a topic's history stands in Redis. `isStale`: it was written under
 * another Redis instance (SPEC §13.1), so it may have been rolled back: its
 * next publish starts a new epoch, and nothing of it is trusted for a replay.
 */
export interface LogPosition extends TopicPosition<string> {
  readonly isStale: boolean;
}

// KEYS: position hash, stream. ARGV: origin head, payload, history size, ttl ms, fresh epoch, channel,
// Redis instance, history max bytes. A missing hash is a new history instance (first publish, expired,
// or Redis lost it), and so is one written under another Redis instance (SPEC §13.1: Redis restarted
// or failed over and may have rolled back, so its offsets may have been handed out already): a new
// epoch, and whatever stream is left of the older instance goes. TOPIC_HISTORY_SIZE=0: no stream,
// offsets still advance. The stream keeps at most TOPIC_HISTORY_SIZE entries and TOPIC_HISTORY_MAX_BYTES
// of payload (hash field 'b'), the oldest going first. The message goes to the topic channel in the
// same step, so every node sees the offsets in the order the history stores them.
const APPEND = `
local position, stream = KEYS[1], KEYS[2]
local origin, payload, historySize, ttl, freshEpoch, channel, instance, maxBytes = unpack(ARGV)
local m = redis.call('HMGET', position, 'e', 'b', 'r')
local e = m[1]
if not e or m[3] ~= instance then
  e = freshEpoch
  m[2] = nil
  redis.call('DEL', position, stream)
  redis.call('HSET', position, 'e', e, 'r', instance)
end
local o = redis.call('HINCRBY', position, 'o', 1)
redis.call('PEXPIRE', position, ttl)
local size = tonumber(historySize)
if size > 0 then
  redis.call('XADD', stream, o .. '-0', 'p', payload)
  local b, n = tonumber(m[2] or '0') + #payload, redis.call('XLEN', stream)
  while n > 0 and (n > size or b > tonumber(maxBytes)) do
    local oldest = redis.call('XRANGE', stream, '-', '+', 'COUNT', 1)[1]
    b = b - #oldest[2][2]
    redis.call('XDEL', stream, oldest[1])
    n = n - 1
  end
  if n == 0 then b = 0 end
  redis.call('HSET', position, 'b', b)
  redis.call('PEXPIRE', stream, ttl)
end
redis.call('PUBLISH', channel, origin .. '#' .. o .. ' ' .. e .. ' ' .. payload)
return {e, o}`;

// KEYS: position hash, stream. ARGV: after offset (exclusive), last offset wanted ('+' = to the end).
// Returns {epoch, offset, instance, entries} or {} when Redis holds no history for the topic.
const READ = `#!lua flags=no-writes
local position, stream = KEYS[1], KEYS[2]
local after, upTo = ARGV[1], ARGV[2]
local m = redis.call('HMGET', position, 'e', 'o', 'r')
if not m[1] then return {} end
local o = tonumber(m[2])
local first = tonumber(after) + 1
local rows = {}
if first <= o then
  local last = upTo
  if last ~= '+' then last = last .. '-0' end
  rows = redis.call('XRANGE', stream, first .. '-0', last)
end
return {m[1], o, m[3] or '', rows}`;

/** A read of a history written under another Redis instance (SPEC §13.1). */
export const STALE = 'stale';

const NOT_APPENDED = new ClusterUnavailableError(
  'cluster_unavailable',
  'Redis is not reachable from this node: the message was not published; retry',
);
const HASH = 0x23; // '#'
const SPACE = 0x20;

type Script = (keys: readonly string[], args: readonly (string | number | Buffer)[]) => Promise<unknown>;

/**
 * Cluster topic history (SPEC §12.4, docs/cluster.md "Topic history"): per
 * topic a stream `th` of the last TOPIC_HISTORY_SIZE messages (at most
 * TOPIC_HISTORY_MAX_BYTES of payload) under ids `<offset>-0` and a hash `tp`
 * `{o: last offset, e: epoch, b: payload bytes in the stream}`, both expiring
 * TOPIC_HISTORY_TTL after the last publish. One script appends and publishes
 * `#<offset> <epoch> <payload>` on the topic channel: one round trip per
 * publish. The memory side of one node is {@link TopicHistory}.
 */
export class TopicLog {
  private readonly appendScript: Script;
  private readonly readScript: Script;
  private readonly head: Buffer;

  constructor(
    /** A topic's history lives on its partition's link (SPEC §13.4). */
    private readonly shards: RedisShards,
    private readonly names: ClusterNames,
    nodeId: string,
    private readonly size: number,
    private readonly ttlMs: number,
    private readonly maxBytes: number,
  ) {
    this.appendScript = shards.script('gatewayTopicAppend', 2, APPEND, 7);
    this.readScript = shards.script('gatewayTopicRead', 2, READ);
    this.head = originHead(nodeId);
  }

  /**
   * Append `payload` to the topic's history and publish it to the other
   * nodes; resolves its position. Without Redis nothing is published:
   * ClusterUnavailableError (503 `cluster_unavailable`, SPEC §12.4).
   */
  async append(topic: string, payload: Buffer): Promise<LoggedMessage> {
    const link = this.shards.ofName(topic);
    if (!link.isUp) throw NOT_APPENDED;
    const args = [
      this.head,
      payload,
      this.size,
      this.ttlMs,
      newEpoch(),
      this.channel(topic),
      link.instance,
      this.maxBytes,
    ];
    const [epoch, offset] = (await this.appendScript(this.keys(topic), args).catch(() =>
      Promise.reject(NOT_APPENDED),
    )) as [string, number];
    return { offset, epoch, payload };
  }

  /**
   * The topic's position and its kept messages after offset `after` (up to
   * `last`, inclusive); null: no history; STALE: a history of another Redis
   * instance (SPEC §13.1), which may lack messages that were delivered.
   */
  async read(topic: string, after: number, last: number | null = null): Promise<TopicLogRead | null | typeof STALE> {
    const reply = (await this.readScript(this.keys(topic), [after, last === null ? '+' : last])) as
      [] | [string, number, string, Array<[string, string[]]>];
    if (reply.length === 0) return null;
    const [epoch, offset, instance, rows] = reply;
    if (instance !== this.shards.ofName(topic).instance) return STALE;
    return {
      epoch,
      offset,
      messages: rows.map(([id, fields]) => ({
        offset: Number.parseInt(id, 10),
        epoch,
        payload: Buffer.from(fields[1]),
      })),
    };
  }

  /** What the history in Redis says of a topic, stale or not; null when it holds none. */
  async positionSeen(topic: string): Promise<LogPosition | null> {
    const link = this.shards.ofName(topic);
    const [epoch, offset, instance] = (await link.timed(
      'hmget',
      link.command.hmget(this.keys(topic)[0], 'e', 'o', 'r'),
    )) as [string | null, string | null, string | null];
    return epoch === null ? null : { epoch, offset: Number(offset), isStale: instance !== link.instance };
  }

  /**
   * Whether a topic without history may have lost messages rather than
   * expired: Redis was replaced (restart, failover) less than
   * TOPIC_HISTORY_TTL ago, so it may have rolled back to before the topic's
   * history existed (SPEC §13.1).
   */
  mayHaveRolledBack(topic: string): boolean {
    const replacedAt = this.shards.ofName(topic).replacedAt;
    return replacedAt !== null && Date.now() - replacedAt < this.ttlMs;
  }

  /** SPEC §13.1: this node delivered more of a topic than Redis now holds. */
  rolledBack(topic: string, evidence: string): void {
    this.shards.ofName(topic).reportRollback(evidence);
  }

  /** SPEC §13.1: the appends so far reached REDIS_WAIT_REPLICAS replicas, else 503 (ClusterUnavailableError). */
  confirm(topic: string): Promise<void> {
    return this.shards.ofName(topic).confirmWrites([partitionOf(topic)]);
  }

  /**
   * Resolves once every topic message Redis published before now has reached
   * this node (a message that seems missing may just be on its way from
   * another node: the publisher's reply and the channel arrive on two
   * connections).
   */
  awaitInFlight(topic: string): Promise<void> {
    return this.shards.ofName(topic).syncSubscriber(this.channel(topic));
  }

  /** The topic's channel (the history's script publishes on it). */
  channel(topic: string): string {
    return this.names.channel('t', topic);
  }

  /**
   * Where the topic stands now; offset 0 and no epoch when Redis holds no
   * history for it, or a stale one (its next publish starts a new epoch).
   */
  async position(topic: string): Promise<TopicPosition> {
    const seen = await this.positionSeen(topic);
    return seen === null || seen.isStale ? { offset: 0, epoch: null } : { offset: seen.offset, epoch: seen.epoch };
  }

  /** SPEC §15.2: where the topic stands and how many messages its stream keeps (none for a stale history). */
  async kept(topic: string): Promise<KeptHistory> {
    const [at, length] = await Promise.all([
      this.position(topic),
      this.shards.ofName(topic).command.xlen(this.names.topicHistory(topic)),
    ]);
    return { epoch: at.epoch, offset: at.offset, kept: at.epoch === null ? 0 : length };
  }

  private keys(topic: string): string[] {
    return [this.names.topicPosition(topic), this.names.topicHistory(topic)];
  }
}

/**
 * Splits a topic channel message of the history's form `#<offset> <epoch> <payload>`;
 * null for any other (a plain message frame from a node without history).
 */
export function decodeLoggedMessage(message: Buffer): LoggedMessage | null {
  if (message[0] !== HASH) return null;
  const offsetEnd = message.indexOf(SPACE, 1);
  const epochEnd = offsetEnd < 0 ? -1 : message.indexOf(SPACE, offsetEnd + 1);
  if (epochEnd < 0) return null;
  const offset = Number(message.toString('latin1', 1, offsetEnd));
  if (!Number.isSafeInteger(offset) || offset < 1) return null;
  return {
    offset,
    epoch: message.toString('latin1', offsetEnd + 1, epochEnd),
    payload: message.subarray(epochEnd + 1),
  };
}

/** 48 random bits, base64url, as the single node's history epochs. */
function newEpoch(): string {
  return randomBytes(6).toString('base64url');
}
