import { EventEmitter } from 'node:events';
import Redis, { Cluster, RedisOptions } from 'ioredis';
import { ClusterOptions } from '../config/redis-url';
import { ShardedSubscriber } from './sharded-subscriber';

/** How often the cluster's slot map is re-read (ioredis' own refresh, and the sharded subscriber's check). */
const SLOTS_REFRESH_MS = 1000;

/**
 * The command side of a link on a Redis Cluster (SPEC §13.5): an ioredis
 * `Cluster` routing each command and script by its key's slot. Typed as
 * `Redis` for the link's callers, who only send keyed commands, scripts and
 * pipelines of one slot (SPEC §13.3); what needs a particular node (WAIT,
 * PUBSUB counts, INFO) the link does itself.
 */
export function createClusterClient(target: ClusterOptions, options: RedisOptions): Redis {
  const { username, password, tls } = target;
  const cluster = new Cluster(
    target.seeds.map((seed) => ({ ...seed })),
    {
      enableOfflineQueue: false,
      lazyConnect: true,
      scaleReads: 'master',
      // Commands of one tick go to each primary as one pipeline: Redis CPU per history publish 40 → 23 µs
      // on three primaries (bench/redis-shards.js).
      enableAutoPipelining: true,
      // Scripts with a variable key count join it as the link defines them (RedisLink.script).
      autoPipeliningIgnoredCommands: [],
      slotsRefreshInterval: SLOTS_REFRESH_MS,
      clusterRetryStrategy: options.retryStrategy ?? undefined,
      redisOptions: {
        ...options,
        ...(username !== undefined && { username }),
        ...(password !== undefined && { password }),
        ...(tls !== undefined && { tls }),
      },
    },
  );
  return cluster as unknown as Redis;
}

/** Whether a link's command client is a Redis Cluster's. */
export function isClusterClient(client: Redis): boolean {
  return (client as unknown) instanceof Cluster;
}

/**
 * The subscriber side of a link on a Redis Cluster: the link's subscriber
 * connection as far as the link uses one (connect, subscribe, unsubscribe,
 * ping, `ready`/`close`/`error`/`messageBuffer` events), made of a
 * {@link ShardedSubscriber} (SSUBSCRIBE on the primary that owns each
 * channel's slot, followed across slot migrations and failovers).
 *
 * `primaries` events carry the primaries' node ids when they change (a
 * failover): for the link, as for a Redis restart, another instance;
 * `resubscribed` events the channels subscribed again on another primary
 * (a slot moved, a failover), whose messages may have been missed meanwhile.
 */
export class ClusterSubscriber extends EventEmitter {
  status: 'wait' | 'connecting' | 'ready' | 'end' = 'wait';
  private readonly sharded: ShardedSubscriber;
  private retryTimer: NodeJS.Timeout | null = null;

  constructor(
    target: ClusterOptions,
    options: RedisOptions,
    private readonly retryDelay: (attempt: number) => number,
  ) {
    super();
    const { username, password, tls } = target;
    this.sharded = new ShardedSubscriber(
      target.seeds,
      {
        connectionName: options.connectionName,
        ...(username !== undefined && { username }),
        ...(password !== undefined && { password }),
        ...(tls !== undefined && { tls }),
      },
      SLOTS_REFRESH_MS,
    );
    this.sharded.onMessage((channel, message) => this.emit('messageBuffer', channel, message));
    this.sharded.onPrimariesChanged((primaries) => this.emit('primaries', primaries));
    this.sharded.onResubscribed((channels) => this.emit('resubscribed', channels));
  }

  /** The primaries' node ids as last read (sorted, space-separated). */
  get primaries(): string {
    return this.sharded.primaries;
  }

  /** Each primary (`host:port`) and whether it answered at the last check. */
  get primaryStates(): ReadonlyArray<readonly [address: string, isUp: boolean]> {
    return this.sharded.primaryStates;
  }

  /** Read the slot map, retrying with the link's backoff until it answers; `ready` then. */
  async connect(attempt = 0): Promise<void> {
    if (this.status === 'end') return;
    this.status = 'connecting';
    try {
      await this.sharded.start();
    } catch (err) {
      this.emit('error', err);
      this.retryTimer = setTimeout(() => void this.connect(attempt + 1), this.retryDelay(attempt));
      this.retryTimer.unref();
      return;
    }
    this.status = 'ready';
    this.emit('ready');
  }

  async subscribe(...channels: string[]): Promise<void> {
    await Promise.all(channels.map((channel) => this.sharded.subscribe(channel)));
  }

  async unsubscribe(channel: string): Promise<void> {
    await this.sharded.unsubscribe(channel);
  }

  /** Read the slot map now (a `primaries` event follows when they changed). */
  async refresh(): Promise<void> {
    await this.sharded.refresh();
  }

  /** Every message of `channel`'s primary sent before now was delivered. */
  sync(channel: string): Promise<void> {
    return this.sharded.sync(channel);
  }

  /** The sharded subscriber follows the slot map itself; a silent probe has nothing more to reconnect. */
  disconnect(): void {
    return;
  }

  async quit(): Promise<void> {
    this.status = 'end';
    if (this.retryTimer !== null) clearTimeout(this.retryTimer);
    await this.sharded.close();
    this.emit('close');
  }
}
