import { EVERY_PARTITION, PARTITIONS, partitionOf } from './channels';
import { jumpHash } from './jump-hash';
import { RedisLink } from './redis-link';

/** A script's runner: keys first (all of one partition, or only control keys), then its arguments. */
export type ShardScript = (keys: readonly string[], args: readonly (string | number | Buffer)[]) => Promise<unknown>;

/**
 * Where each partition lives (SPEC §13.4): the control instance (REDIS_URL:
 * node registry, liveness, node channels) and the partitions' instances
 * (REDIS_SHARDS; unset: every partition on the control instance). Partition
 * p lives on shard `jumpHash(p, N)`. Features reach a partition's keys and
 * channels through {@link of} (by partition), {@link forKey} (by a key's
 * `{tag}`) or {@link ofName} (by the name the partition is computed from).
 */
export class RedisShards {
  /** The partitions' links, in REDIS_SHARDS order (the control link alone when unset). */
  readonly data: readonly RedisLink[];
  private readonly byPartition: readonly RedisLink[];

  constructor(
    readonly control: RedisLink,
    shards: readonly RedisLink[] = [],
  ) {
    this.data = shards.length === 0 ? [control] : shards;
    this.byPartition = Array.from({ length: PARTITIONS }, (_, p) => this.data[jumpHash(p, this.data.length)]);
  }

  /** Every link once: the control link, then the shards. */
  get all(): readonly RedisLink[] {
    return this.data.includes(this.control) ? this.data : [this.control, ...this.data];
  }

  /** The partitions living on `link`. */
  partitionsOf(link: RedisLink): number[] {
    return EVERY_PARTITION.filter((p) => this.byPartition[p] === link);
  }

  /** The link of partition `partition`. */
  of(partition: number): RedisLink {
    return this.byPartition[partition];
  }

  /** The link of the partition of `name` (a topic, namespace, user or connection id). */
  ofName(name: string): RedisLink {
    return this.byPartition[partitionOf(name)];
  }

  /** The link of a key or channel by its `{tag}` (partition-tags.ts: `{<p>-…}`); the control link without one. */
  forKey(key: string): RedisLink {
    const partition = partitionOfKey(key);
    return partition === null ? this.control : this.byPartition[partition];
  }

  /**
   * Send commands of any partitions at once: one pipeline per link, each in
   * the order given; resolves to the replies in that order (`[error, result]`,
   * as ioredis gives them), timed as `command`.
   */
  async pipeline(command: string, commands: readonly KeyedCommand[]): Promise<Array<[Error | null, unknown]>> {
    const replies = new Array<[Error | null, unknown]>(commands.length);
    await Promise.all(
      this.groups(commands.map(([, key]) => partitionOfKey(key))).map(async ([link, indexes]) => {
        const sent = link.command.pipeline(indexes.map((i) => [...commands[i]]));
        const got = (await link.timed(command, sent.exec())) ?? [];
        indexes.forEach((index, j) => (replies[index] = got[j] ?? [null, null]));
      }),
    );
    return replies;
  }

  /**
   * How commands of these partitions (null: control keys) travel together:
   * one pipeline per link, each in the given order; on a Redis Cluster, where
   * a pipeline may only hold keys of one slot, one per partition (SPEC §13.5).
   */
  groups(partitions: ReadonlyArray<number | null>): Array<[RedisLink, number[]]> {
    const groups = new Map<RedisLink | number, [RedisLink, number[]]>();
    partitions.forEach((partition, i) => {
      const link = partition === null ? this.control : this.byPartition[partition];
      const group = link.isCluster ? (partition ?? -1) : link;
      const found = groups.get(group);
      if (found === undefined) groups.set(group, [link, [i]]);
      else found[1].push(i);
    });
    return [...groups.values()];
  }

  /**
   * Define a script of partition keys on every partition's link; its runner
   * goes to the link of its first key's partition (every key of one call is
   * in one partition, SPEC §13.3).
   */
  script(name: string, keyCount: number | null, source: string, instanceArg?: number): ShardScript {
    const runners = this.data.map((link) => link.script(name, keyCount, source, instanceArg));
    const byPartition = this.byPartition.map((link) => runners[this.data.indexOf(link)]);
    return (keys, args) => {
      const partition = partitionOfKey(keys[0]);
      if (partition === null) throw new Error(`script ${name}: its first key ${keys[0]} names no partition`);
      return byPartition[partition](keys, args);
    };
  }
}

/** A command for {@link RedisShards.pipeline}: its name, its key (which decides its link), then the rest. */
export type KeyedCommand = readonly [name: string, key: string, ...args: Array<string | number | Buffer>];

/**
 * The partition of a key or channel by its hash tag (the first `{…}`, as
 * Redis Cluster reads it): `<p>-<suffix>` names partition p; any other tag
 * (the control tag) or none: null, a control key.
 */
export function partitionOfKey(key: string): number | null {
  const open = key.indexOf('{');
  if (open < 0) return null;
  const close = key.indexOf('}', open + 1);
  const dash = key.indexOf('-', open + 1);
  if (close < 0 || dash < 0 || dash > close) return null;
  const digits = key.slice(open + 1, dash);
  const partition = /^\d{1,3}$/.test(digits) ? Number(digits) : NaN;
  return Number.isInteger(partition) && partition < PARTITIONS ? partition : null;
}
