import { RedisLink } from './redis-link';

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
 * live on several Redis (§13.4, §13.5), one pipeline per Redis, each in
 * order. Replies come back by the index {@link add} returned.
 */
export class PartitionBatch {
  private readonly queued: Queued[] = [];

  constructor(private readonly link: RedisLink) {}

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
    const pipeline = this.link.command.pipeline() as unknown as Pipeline;
    for (const { name, args } of this.queued) pipeline[name](...args);
    return (await pipeline.exec()) ?? [];
  }
}
