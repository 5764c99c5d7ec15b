import { randomBytes } from 'node:crypto';
import { ClusterNames, originHead, partitionOf } from '../cluster/channels';
import { ClusterUnavailableError } from '../cluster/cluster-unavailable.error';
import { KeyedCommand, RedisShards } from '../cluster/redis-shards';
import { LatticeEntry, decodeEntry, encodeEntry } from './lattice-entry';
import { LatticeStore } from './lattice-store';

/** A namespace's position: its epoch (new whenever Redis lost the namespace) and last version. */
export interface LogPosition {
  readonly epoch: string;
  readonly version: number;
}

/** Everything Redis holds for a namespace: its snapshot, then the entries after it, in order. */
export interface LogContents {
  /** null: Redis holds nothing for it (new, expired, or lost). */
  readonly position: LogPosition | null;
  readonly snapshotVersion: number;
  readonly snapshot: LatticeEntry | null;
  readonly entries: ReadonlyArray<{ readonly version: number; readonly entry: LatticeEntry }>;
}

/** A new snapshot is written once the log holds this many entries after the last one. */
export const COMPACT_AFTER_ENTRIES = 1000;

// KEYS: meta, log, snap. ARGV: origin head, entry JSON, retention ms, new epoch, channel, Redis instance.
// No merging here (CLUSTER.md principle 4): Redis orders and stores, crdt.ts merges. A meta written
// under another Redis instance gets a new epoch, log and snapshot kept (SPEC §13.1: Redis may have
// rolled back, so versions of the old epoch may have been applied by nodes already; a new epoch makes
// every holder re-read and merge its copy back, and no version is ever reused within an epoch).
const APPEND = `
local meta, log, snap = KEYS[1], KEYS[2], KEYS[3]
local origin, entry, retention, freshEpoch, channel, instance = unpack(ARGV)
local m = redis.call('HMGET', meta, 'e', 'r')
local e = m[1]
if not e then
  e = freshEpoch
  redis.call('HSET', meta, 'e', e, 'v', 0, 's', 0, 'r', instance)
elseif m[2] ~= instance then
  e = freshEpoch
  redis.call('HSET', meta, 'e', e, 'r', instance)
end
local v = redis.call('HINCRBY', meta, 'v', 1)
redis.call('XADD', log, v .. '-1', 'x', entry)
for _, key in ipairs({meta, log, snap}) do redis.call('PEXPIRE', key, retention) end
redis.call('PUBLISH', channel, origin .. '{"e":"' .. e .. '","v":' .. v .. ',"x":' .. entry .. '}')
return {e, v, tonumber(redis.call('HGET', meta, 's'))}`;

// KEYS: meta, log, snap. Returns {epoch, version, snapshot version, snapshot or false, entries} or {}.
const READ = `#!lua flags=no-writes
local meta, log, snap = KEYS[1], KEYS[2], KEYS[3]
local m = redis.call('HMGET', meta, 'e', 'v', 's')
if not m[1] then return {} end
local s = tonumber(m[3])
return {m[1], tonumber(m[2]), s, redis.call('GET', snap), redis.call('XRANGE', log, (s + 1) .. '-0', '+')}`;

// KEYS: meta, log, snap. ARGV: epoch, version K, snapshot entry JSON. Keeps the newest snapshot only.
const COMPACT = `
local meta, log, snap = KEYS[1], KEYS[2], KEYS[3]
local epoch, version, snapshot = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local m = redis.call('HMGET', meta, 'e', 's')
if m[1] ~= epoch or tonumber(m[2]) >= version then return 0 end
redis.call('SET', snap, snapshot)
local ttl = redis.call('PTTL', meta)
if ttl > 0 then redis.call('PEXPIRE', snap, ttl) end
redis.call('HSET', meta, 's', version)
redis.call('XTRIM', log, 'MINID', (version + 1) .. '-0')
return 1`;

const NOT_APPENDED = new ClusterUnavailableError(
  'cluster_unavailable',
  'Redis is not reachable from this node: the lattice update was not applied; retry',
);

type Script = (keys: readonly string[], args: readonly (string | number | Buffer)[]) => Promise<unknown>;

/**
 * A namespace's durable, ordered log in Redis (SPEC §11 "Lattices are
 * durable", CLUSTER.md): a stream of entries with explicit ids `<version>-1`,
 * a meta hash `{e: epoch, v: last version, s: snapshot version}` and a
 * snapshot entry. Appending publishes `{e, v, x: entry}` on the namespace
 * channel in the same script, so every node sees one order per namespace.
 */
export class LatticeLog {
  private readonly appendScript: Script;
  private readonly readScript: Script;
  private readonly compactScript: Script;
  private readonly head: Buffer;

  constructor(
    /** A namespace's log lives on its partition's link (SPEC §13.4). */
    private readonly shards: RedisShards,
    private readonly names: ClusterNames,
    nodeId: string,
    private readonly retentionMs: number,
  ) {
    this.appendScript = shards.script('gatewayLatticeAppend', 3, APPEND, 6);
    this.readScript = shards.script('gatewayLatticeRead', 3, READ);
    this.compactScript = shards.script('gatewayLatticeCompact', 3, COMPACT);
    this.head = originHead(nodeId);
  }

  /**
   * Appends an entry; resolves its position. Compacts in the background when
   * the log grew long. Without Redis there is no shared state to update:
   * ClusterUnavailableError (503 `cluster_unavailable`, SPEC §11).
   */
  async append(namespace: string, entry: LatticeEntry): Promise<LogPosition> {
    const epoch = randomBytes(9).toString('base64url');
    const link = this.shards.ofName(namespace);
    const args = [
      this.head,
      encodeEntry(entry),
      this.retentionMs,
      epoch,
      this.names.channel('l', namespace),
      link.instance,
    ];
    if (!link.isUp) throw NOT_APPENDED;
    const [e, v, s] = (await this.appendScript(this.keys(namespace), args).catch(() =>
      Promise.reject(NOT_APPENDED),
    )) as [string, number, number];
    if (v - s > COMPACT_AFTER_ENTRIES) void this.compact(namespace).catch(() => undefined);
    return { epoch: e, version: v };
  }

  async read(namespace: string): Promise<LogContents> {
    const reply = (await this.readScript(this.keys(namespace), [])) as
      [] | [string, number, number, string | null, [string, string[]][]];
    if (reply.length === 0) return { position: null, snapshotVersion: 0, snapshot: null, entries: [] };
    const [epoch, version, snapshotVersion, snapshot, rows] = reply;
    return {
      position: { epoch, version },
      snapshotVersion,
      snapshot: snapshot === null ? null : decodeEntry(JSON.parse(snapshot)),
      entries: rows.map(([id, fields]) => ({
        version: Number.parseInt(id, 10),
        entry: decodeEntry(JSON.parse(fields[1])),
      })),
    };
  }

  /** The current position of each namespace in one round trip (null: Redis holds nothing for it). */
  async positions(namespaces: readonly string[]): Promise<Array<LogPosition | null>> {
    const commands = namespaces.map((namespace): KeyedCommand => ['hmget', this.keys(namespace)[0], 'e', 'v']);
    const replies = await this.shards.pipeline('hmget', commands);
    return namespaces.map((_, i) => {
      const [epoch, version] = (replies[i]?.[1] ?? [null, null]) as [string | null, string | null];
      return epoch === null ? null : { epoch, version: Number(version) };
    });
  }

  /** SPEC §13.1: the appends so far reached REDIS_WAIT_REPLICAS replicas, else 503 (ClusterUnavailableError). */
  confirm(namespace: string): Promise<void> {
    return this.shards.ofName(namespace).confirmWrites([partitionOf(namespace)]);
  }

  /** SPEC §13.1: this node applied more of a namespace than Redis now holds. */
  rolledBack(namespace: string, evidence: string): void {
    this.shards.ofName(namespace).reportRollback(evidence);
  }

  /** Keep the keys of namespaces this node holds for another LATTICE_RETENTION. */
  async refresh(namespaces: Iterable<string>): Promise<void> {
    const commands: KeyedCommand[] = [];
    for (const namespace of namespaces)
      for (const key of this.keys(namespace)) commands.push(['pexpire', key, this.retentionMs]);
    if (commands.length > 0) await this.shards.pipeline('pexpire', commands);
  }

  /** Fold what Redis holds into one snapshot entry and trim the log up to it (CLUSTER.md "Compaction"). */
  async compact(namespace: string): Promise<void> {
    const contents = await this.read(namespace);
    if (contents.position === null) return;
    const store = new LatticeStore();
    for (const entry of entriesOf(contents)) store.merge(namespace, entry.body, entry.atMs);
    const nowMs = Date.now();
    const snapshot = encodeEntry({ atMs: nowMs, body: store.exportNamespace(namespace, nowMs) });
    await this.compactScript(this.keys(namespace), [contents.position.epoch, contents.position.version, snapshot]);
  }

  private keys(namespace: string): string[] {
    const base = this.names.lattice(namespace);
    return [`${base}:meta`, `${base}:log`, `${base}:snap`];
  }
}

/** The snapshot (when any), then every entry after it, in log order. */
export function entriesOf(contents: LogContents): LatticeEntry[] {
  const entries = contents.entries.map((row) => row.entry);
  return contents.snapshot === null ? entries : [contents.snapshot, ...entries];
}
