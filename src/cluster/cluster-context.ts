import { ClusterNames } from './channels';
import { NodeGoneListener, NodeLiveness } from './node-liveness';
import { RedisLink } from './redis-link';
import { RedisShards } from './redis-shards';

/**
 * What features need of cluster mode beyond the {@link Broker}: the Redis
 * link for their own keys and scripts (lattice log, presence), the names
 * under REDIS_PREFIX, and node-death notices. `link` is null on a single
 * node, where features keep their in-memory path unchanged.
 */
export class ClusterContext {
  /** The control instance's link (REDIS_URL); null on a single node. */
  readonly link: RedisLink | null;

  constructor(
    /** Where each partition lives (SPEC §13.4); null on a single node. */
    readonly shards: RedisShards | null,
    readonly names: ClusterNames,
    readonly nodeId: string,
    private readonly liveness: NodeLiveness | null,
  ) {
    this.link = shards?.control ?? null;
  }

  /** Withdraw this node and close the links (app shutdown). */
  async close(): Promise<void> {
    await this.liveness?.stop();
    await Promise.all((this.shards?.all ?? []).map((link) => link.close()));
  }

  /** Called once per dead node, on the node that reaps it (cluster mode only). */
  onNodeGone(listener: NodeGoneListener): void {
    this.liveness?.onNodeGone(listener);
  }
}
