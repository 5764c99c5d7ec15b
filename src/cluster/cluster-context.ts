import { ClusterNames } from './channels';
import { NodeGoneListener, NodeLiveness } from './node-liveness';
import { RedisLink } from './redis-link';

/**
 * What features need of cluster mode beyond the {@link Broker}: the Redis
 * link for their own keys and scripts (lattice log, presence), the names
 * under REDIS_PREFIX, and node-death notices. `link` is null on a single
 * node, where features keep their in-memory path unchanged.
 */
export class ClusterContext {
  constructor(
    readonly link: RedisLink | null,
    readonly names: ClusterNames,
    readonly nodeId: string,
    private readonly liveness: NodeLiveness | null,
  ) {}

  /** Withdraw this node and close the link (app shutdown). */
  async close(): Promise<void> {
    await this.liveness?.stop();
    await this.link?.close();
  }

  /** Called once per dead node, on the node that reaps it (cluster mode only). */
  onNodeGone(listener: NodeGoneListener): void {
    this.liveness?.onNodeGone(listener);
  }
}
