import { Logger } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { ClusterNames } from './channels';
import { RedisLink } from './redis-link';

/** Runs once per dead node, on the one node that took the reaper lease for it. */
export type NodeGoneListener = (nodeId: string) => Promise<void>;

/** CLUSTER.md: a liveness key lives ~10 s and is refreshed every 3 s, so a dead node is noticed within 15 s. */
export const ALIVE_TTL_MS = 10_000;
export const ALIVE_REFRESH_MS = 3000;

/**
 * This node's liveness key and the watch over the others (SPEC §11 "Node
 * death"). A node whose liveness key is gone while it is still listed is
 * reaped by exactly one node (a `SET NX` lease), through the registered
 * listeners (presence removes its users' connection counts).
 */
export class NodeLiveness {
  private readonly logger = new Logger(NodeLiveness.name);
  private readonly token = randomBytes(12).toString('base64url');
  private readonly goneListeners: NodeGoneListener[] = [];
  private timer: NodeJS.Timeout | null = null;
  private isTicking = false;

  constructor(
    private readonly link: RedisLink,
    private readonly names: ClusterNames,
    private readonly nodeId: string,
  ) {}

  /** Claims this node's id; false when a live node holds it (SPEC §11: refuse to start). */
  async claim(): Promise<boolean> {
    const taken = await this.link.command.set(this.names.alive(this.nodeId), this.token, 'PX', ALIVE_TTL_MS, 'NX');
    if (taken === null) return false;
    await this.link.command.sadd(this.names.nodes, this.nodeId);
    return true;
  }

  onNodeGone(listener: NodeGoneListener): void {
    this.goneListeners.push(listener);
  }

  /**
   * Refresh our key and look for dead nodes every {@link ALIVE_REFRESH_MS}.
   * After every reconnection, this node is back in the registry before the
   * features re-assert their state (this is the link's first up-listener):
   * a node whose presence is in Redis is always one whose death is noticed.
   */
  start(): void {
    this.link.onUp(async () => void (await this.register()));
    this.timer = setInterval(() => void this.tick(), ALIVE_REFRESH_MS);
    this.timer.unref();
  }

  /** Stop refreshing and withdraw this node (drain): others do not reap it. */
  async stop(): Promise<void> {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    if (!this.link.isUp) return;
    await Promise.all([
      this.link.command.del(this.names.alive(this.nodeId)),
      this.link.command.srem(this.names.nodes, this.nodeId),
    ]).catch(() => undefined);
  }

  /**
   * Set our liveness key and list this node. SET (not NX) re-asserts a key
   * Redis lost; GET tells whether it was still ours. False: it was gone.
   */
  private async register(): Promise<boolean> {
    const redis = this.link.command;
    const previous = await this.link.timed(
      'set',
      redis.set(this.names.alive(this.nodeId), this.token, 'PX', ALIVE_TTL_MS, 'GET'),
    );
    await redis.sadd(this.names.nodes, this.nodeId);
    return previous === this.token;
  }

  private async tick(): Promise<void> {
    if (!this.link.isUp || this.isTicking) return;
    this.isTicking = true;
    try {
      if (!(await this.register())) {
        // Our key was gone while the link stayed up: Redis lost data, or this node was stopped
        // (SIGSTOP, a long pause) past the timeout and reaped. Re-assert everything, as after a reconnect.
        this.logger.warn({ msg: "liveness key was lost: re-asserting this node's state" });
        this.link.resyncNow();
      }
      const redis = this.link.command;
      const others = (await redis.smembers(this.names.nodes)).filter((id) => id !== this.nodeId);
      if (others.length === 0) return;
      const replies = (await redis.pipeline(others.map((id) => ['exists', this.names.alive(id)])).exec()) ?? [];
      for (let i = 0; i < others.length; i++) if (replies[i]?.[1] === 0) await this.reap(others[i]);
    } catch (err) {
      this.logger.debug({ msg: 'liveness tick failed', error: (err as Error).message });
    } finally {
      this.isTicking = false;
    }
  }

  private async reap(nodeId: string): Promise<void> {
    const lease = await this.link.command.set(this.names.reaper(nodeId), this.nodeId, 'PX', ALIVE_TTL_MS, 'NX');
    if (lease === null) return;
    this.logger.warn({ msg: 'node gone: reaping it', node: nodeId });
    for (const listener of this.goneListeners) await listener(nodeId);
    await this.link.command.srem(this.names.nodes, nodeId);
  }
}
