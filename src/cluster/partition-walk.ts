/**
 * Walks over per-partition keys (SPEC §13.3): a script touches one partition,
 * so what spans the cluster (due deadlines, a node's users or sessions) is
 * read partition by partition, every partition's read sent at once.
 */
import { REDIS_NOW } from './redis-now';
import { EVERY_PARTITION } from './channels';
import { RedisShards, ShardScript } from './redis-shards';

/** Lua, read only: the members of the sorted set KEYS[1] due by Redis' clock (score ≤ now), at most ARGV[1]. */
const DUE_MEMBERS = `#!lua flags=no-writes
${REDIS_NOW}
local zset, limit = KEYS[1], tonumber(ARGV[1])
return redis.call('ZRANGEBYSCORE', zset, '-inf', now, 'LIMIT', 0, limit)`;

/** One partition's members, with the partition they were read from. */
export interface PartitionMembers {
  readonly partition: number;
  readonly members: readonly string[];
}

/** Reads a key of every partition at once (one round trip); partitions with nothing are left out. */
async function everyPartition(
  partitions: readonly number[],
  read: (partition: number) => Promise<string[]>,
): Promise<PartitionMembers[]> {
  const parts = await Promise.all(partitions.map(async (partition) => ({ partition, members: await read(partition) })));
  return parts.filter((part) => part.members.length > 0);
}

/** The walks over every partition, each read on its partition's link. */
export class PartitionWalk {
  private readonly dueScript: ShardScript;

  constructor(private readonly shards: RedisShards) {
    this.dueScript = shards.script('gatewayDueMembers', 1, DUE_MEMBERS);
  }

  /** The members of every partition's (or of `partitions'`) sorted set `keyOf(p)` whose score is due, at most `limit` each. */
  due(
    keyOf: (partition: number) => string,
    limit: number,
    partitions: readonly number[] = EVERY_PARTITION,
  ): Promise<PartitionMembers[]> {
    return everyPartition(partitions, (partition) => this.dueScript([keyOf(partition)], [limit]) as Promise<string[]>);
  }

  /** The members of every partition's (or of `partitions'`) set `keyOf(p)`. */
  members(
    keyOf: (partition: number) => string,
    partitions: readonly number[] = EVERY_PARTITION,
  ): Promise<PartitionMembers[]> {
    return everyPartition(partitions, (partition) => {
      const link = this.shards.of(partition);
      return link.timed('smembers', link.command.smembers(keyOf(partition)));
    });
  }
}
