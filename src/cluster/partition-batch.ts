import { RedisLink } from './redis-link';
import { RedisShards } from './redis-shards';

/** One command's reply in a batch: its error, or its result. */
export type BatchReply = readonly [Error | null, unknown];

interface Queued {
  readonly partition: number;
  readonly name: string;
  readonly args: readonly (string | number | Buffer)[];
}

type Pipeline = Record<string, (...args: unknown[]) => unknown> & {
  exec(): Promise<Array<[Error | null, unknown]> | null>;
};

/**
 * Commands sent together, each declared with the partition all its keys are
 * in (SPEC §13.3: a script or command never spans partitions): a Redis
 * command (`set`, `pexpire`, ...) or a script defined on the link
 * ({@link RedisLink.script}). The batch, not its caller, decides how they
 * travel: on one Redis as one pipeline, in the order added; where partitions
 * live on several Redis (§13.4), one pipeline per Redis, each in order; on a
 * Redis Cluster (§13.5) one per partition. Replies come back by the index {@link add} returned.
 */
export class PartitionBatch {
  private readonly queued: Queued[] = [];
  /** The links the last {@link exec} wrote to, each with the partitions it wrote (null: control keys). */
  private used = new Map<RedisLink, Array<number | null>>();

  constructor(private readonly shards: RedisShards) {}

  get size(): number {
    return this.queued.length;
  }

  /** Queue `name(...args)` (keys first) for `partition`; returns its index among the replies. */
  add(partition: number, name: string, args: readonly (string | number | Buffer)[]): number {
    return this.queued.push({ partition, name, args }) - 1;
  }

  /** Send every command queued; resolves to their replies by index (rejects when Redis cannot be reached). */
  async exec(): Promise<ReadonlyArray<BatchReply | undefined>> {
    if (this.queued.length === 0) return [];
    const groups = this.shards.groups(this.queued.map(({ partition }) => partition));
    const replies = new Array<BatchReply | undefined>(this.queued.length);
    this.used = new Map();
    for (const [link, indexes] of groups)
      this.used.set(link, [...(this.used.get(link) ?? []), ...indexes.map((i) => this.queued[i].partition)]);
    await Promise.all(
      groups.map(async ([link, indexes]) => {
        const pipeline = link.command.pipeline() as unknown as Pipeline;
        for (const i of indexes) pipeline[this.queued[i].name](...this.queued[i].args);
        const got = (await pipeline.exec()) ?? [];
        indexes.forEach((index, j) => (replies[index] = got[j]));
      }),
    );
    return replies;
  }

  /** SPEC §13.1 REDIS_WAIT_REPLICAS: every link the batch wrote to has its writes on the replicas (else rejects). */
  async confirmWrites(): Promise<void> {
    await Promise.all([...this.used].map(([link, partitions]) => link.confirmWrites(partitions)));
  }
}
