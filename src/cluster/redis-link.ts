import { Logger } from '@nestjs/common';
import Redis, { RedisOptions } from 'ioredis';
import { RedisWait } from '../config/gateway-config';
import { GatewayMetrics } from '../metrics/gateway-metrics';
import { ClusterUnavailableError } from './cluster-unavailable.error';
import { PrimaryWatch } from './primary-watch';
import { createRedisClient, redisTargetOf } from './redis-client';
import { ClusterSubscriber, createClusterClient } from './redis-cluster-client';
import { redisUrlForLog } from '../config/redis-address';
import { LinkMode, ScriptSend, clusterMode, serverMode } from './link-modes';
import { OutageCauses } from './outage-causes';
import { SilenceProbe } from './silence-probe';

/** Runs after every (re)connection, once both connections are ready and channels are resubscribed. */
export type LinkUpListener = () => Promise<void> | void;
export type LinkMessageListener = (channel: string, message: Buffer) => void;

/** CLUSTER.md: resubscribe after a reconnect in batches of this many channels. */
const RESUBSCRIBE_BATCH = 512;
const MAX_RETRY_DELAY_MS = 1000;
/** REDIS_WAIT_REPLICAS=0: nothing to wait for (one shared promise, nothing allocated per write). */
const CONFIRMED = Promise.resolve();
/** The link's subscriber connection as the link uses it: a Redis connection, or a Redis Cluster's sharded subscriber. */
interface LinkSubscriber {
  readonly status: string;
  connect(): Promise<unknown>;
  subscribe(...channels: string[]): Promise<unknown>;
  unsubscribe(channel: string): Promise<unknown>;
  quit(): Promise<unknown>;
  disconnect(reconnect?: boolean): void;
  on(event: string, listener: (...args: any[]) => void): unknown;
}

/**
 * The two Redis connections of a node (CLUSTER.md "Channels and keys"): one
 * runs commands and publishes, in order; one is the subscriber. Both
 * reconnect by themselves; the link is `up` while both are ready, and after
 * every reconnection it resubscribes its channels (batched) and then tells
 * its up-listeners, which re-assert this node's state.
 *
 * Commands fail at once while the link is down (no offline queue): callers
 * decide what an outage means for them (SPEC §11 "Redis outage").
 */
export class RedisLink {
  readonly command: Redis;
  private readonly subscriber: LinkSubscriber;
  /** On a Redis Cluster, the subscriber as what it is (it also knows the primaries); null elsewhere. */
  private readonly sharded: ClusterSubscriber | null;
  /** SPEC §13.2: with Sentinel, both connections stay on the current primary. */
  private readonly primary: PrimaryWatch | null;
  private readonly mode: LinkMode;
  /** On a Redis Cluster (SPEC §13.5): a pipeline may only hold keys of one slot. */
  readonly isCluster: boolean;
  private readonly logger = new Logger(RedisLink.name);
  private readonly channels = new Set<string>();
  private readonly upListeners: LinkUpListener[] = [];
  /** Every script this node defined: name → the Lua Redis runs (the script spec checks that each ran, SPEC §13.3). */
  readonly scripts = new Map<string, string>();
  private readonly settleListeners: LinkUpListener[] = [];
  private readonly messageListeners: LinkMessageListener[] = [];
  private readonly resubscribedListeners: Array<(channels: readonly string[]) => void> = [];
  private isUpNow = false;
  /** A reconnection's settle listeners run: commands work, channels are not resubscribed yet. */
  private isSettlingNow = false;
  private hasBeenUp = false;
  private isClosing = false;
  private resync: Promise<void> | null = null;
  /** Both connections became ready, or a re-assertion was asked for, while a resync ran: run another after it. */
  private isResyncAgain = false;
  /** Epoch ms when the link last went down (null: never was up, or never went down). */
  private downAt: number | null = null;
  private probe: SilenceProbe | null = null;
  /** The Redis instance the link last came up on ({@link instance}); '' before the first. */
  private instanceNow = '';
  /** Epoch ms when this node first saw Redis as another instance than before (null: never did). */
  private replacedAtMs: number | null = null;
  /** The instance a rollback was last reported for: counted once per instance. */
  private rollbackSeenOn = '';
  /** REDIS_URL as log lines show it: credentials redacted, host shown. */
  readonly address: string;
  /** Why the link is down, and what of it was logged. */
  private readonly causes: OutageCauses;

  constructor(
    url: string,
    private readonly metrics: GatewayMetrics,
    nodeId: string,
    private readonly wait: RedisWait = { replicas: 0, timeoutMs: 0 },
    /** The `shard` label of its metrics (SPEC §13.6): `control` for REDIS_URL, 1…N for REDIS_SHARDS. */
    private readonly shard = 'control',
  ) {
    const options: RedisOptions = {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      autoResubscribe: false,
      lazyConnect: true,
      connectTimeout: 2000,
      retryStrategy: (attempt) => Math.min(50 * 2 ** Math.min(attempt, 5), MAX_RETRY_DELAY_MS),
      connectionName: `gateway:${nodeId}`,
    };
    const target = redisTargetOf(url);
    this.address = redisUrlForLog(url, target);
    this.causes = new OutageCauses(this.address, { isUp: () => this.isUpNow, isClosing: () => this.isClosing });
    metrics.redisUp.labels(shard).set(0);
    this.isCluster = target.kind === 'cluster';
    if (target.kind === 'cluster') {
      this.command = createClusterClient(target.options, options);
      const sharded = new ClusterSubscriber(target.options, options, options.retryStrategy as (n: number) => number);
      this.subscriber = sharded;
      this.sharded = sharded;
      this.primary = null;
      this.mode = clusterMode(this, sharded);
      sharded.on('primaries', (primaries: string) => this.onPrimariesChanged(primaries));
      sharded.on('resubscribed', (channels: string[]) => {
        for (const listener of this.resubscribedListeners) listener(channels);
      });
    } else {
      const subscriber = createRedisClient(target, options);
      // A shard's commands are a third (or less) of the whole: batched per tick, Redis reads them in fewer,
      // larger reads (its CPU per history publish 33 → 20 µs on three shards, bench/redis-shards.js). One
      // Redis keeps writing each command at once: there the gateway's CPU is the bound, and it costs ~6%.
      this.command = createRedisClient(target, { ...options, enableAutoPipelining: shard !== 'control' });
      this.subscriber = subscriber;
      this.sharded = null;
      this.primary = new PrimaryWatch(target, this.command, subscriber, metrics.redisFailovers);
      this.mode = serverMode(this, subscriber);
    }
    for (const [role, client] of [
      ['command', this.command],
      ['subscriber', this.subscriber],
    ] as const) {
      client.on('ready', () => this.onReady());
      client.on('close', () => this.onDown(role));
      client.on('reconnecting', () => metrics.redisReconnects.inc());
      // ioredis reports every failed attempt here; the down transition is logged once in onDown.
      client.on('error', (err: Error) => this.causes.error(role, err));
    }
    this.subscriber.on('messageBuffer', (channel: Buffer | string, message: Buffer) => {
      this.probe?.heard();
      const name = typeof channel === 'string' ? channel : channel.toString();
      for (const listener of this.messageListeners) listener(name, message);
    });
  }

  /**
   * On a Redis Cluster, each primary (`host:port`) `up` or `down` as it
   * answered the last check (every second), for readiness (SPEC §13.6); null
   * on one Redis.
   */
  get primaries(): Record<string, 'up' | 'down'> | null {
    if (this.sharded === null) return null;
    return Object.fromEntries(this.sharded.primaryStates.map(([address, isUp]) => [address, isUp ? 'up' : 'down']));
  }

  /** Both connections ready. */
  get isUp(): boolean {
    return this.isUpNow;
  }

  /** Commands may be sent: the link is up, or a reconnection's settle listeners run ({@link onSettle}). */
  get isWritable(): boolean {
    return this.isUpNow || this.isSettlingNow;
  }

  /**
   * The Redis instance this link talks to (`INFO server` `run_id`; on a Redis
   * Cluster its primaries' node ids and `run_id`s), read at every
   * (re)connection before the link is up: a restart, or a failover to a
   * replica, makes it another one. Data written under an earlier instance may
   * have been rolled back (SPEC §13.1), so the scripts that number things
   * (topic offsets, lattice versions) take it as an argument and start a new
   * epoch when the data they find was written under another instance.
   */
  get instance(): string {
    return this.instanceNow;
  }

  /**
   * When this node last found Redis replaced by another instance (restart,
   * failover), epoch ms; null if it never was. A history that is missing
   * soon after may have been rolled back rather than expired (SPEC §13.1).
   */
  get replacedAt(): number | null {
    return this.replacedAtMs;
  }

  /**
   * A feature found Redis behind what this node saw (SPEC §13.1): counted in
   * gateway_redis_rollbacks_total and logged, once per instance.
   */
  reportRollback(evidence: string): void {
    if (this.rollbackSeenOn === this.instanceNow) return;
    this.rollbackSeenOn = this.instanceNow;
    this.metrics.redisRollbacks.inc();
    this.logger.warn({
      msg: 'redis came back with less than it acknowledged (rolled back): new epochs, lattices merged back',
      evidence,
    });
  }

  /** When the link last went down (epoch ms), or null: features tell what Redis could not see meanwhile. */
  get downSince(): number | null {
    return this.downAt;
  }

  /**
   * Run every up-listener again, as after a reconnection, though the link
   * stayed up: Redis lost this node's state without closing the connection
   * (its data was flushed, or this node was paused past its liveness timeout
   * and reaped). No-op while down: the reconnection will do it.
   */
  resyncNow(): void {
    if (!this.isUpNow) return;
    if (this.resync !== null) {
      this.isResyncAgain = true;
      return;
    }
    this.resync = this.settle()
      .then(() => this.announce())
      .finally(() => this.afterResync());
  }

  /**
   * Connect both connections; resolves once up or after `timeoutMs`, whichever
   * comes first (the node then starts with Redis down and keeps retrying).
   */
  async open(timeoutMs: number): Promise<boolean> {
    this.command.connect().catch(() => undefined);
    this.subscriber.connect().catch(() => undefined);
    const deadlineAt = Date.now() + timeoutMs;
    while (!this.isUpNow && Date.now() < deadlineAt) await new Promise((resolve) => setTimeout(resolve, 10));
    return this.isUpNow;
  }

  /** Run `listener` after every reconnection, and now when the link is up already. */
  onUp(listener: LinkUpListener): void {
    this.upListeners.push(listener);
    if (this.isUpNow && this.resync === null) void this.runListener(listener);
  }

  /**
   * Run `listener` first at every resync after the first connection: after a
   * reconnection once the command connection works but before any channel is
   * resubscribed and before the link counts as up (so before this node can
   * deliver anything it hears); on {@link resyncNow} before the up-listeners.
   * For state that must be settled before delivery: a session revoked while
   * this node was cut off ends here first (SPEC §12.6).
   */
  onSettle(listener: LinkUpListener): void {
    this.settleListeners.push(listener);
  }

  onMessage(listener: LinkMessageListener): void {
    this.messageListeners.push(listener);
  }

  /**
   * On a Redis Cluster: `listener` gets the channels subscribed again on
   * another primary while the link stayed up (a slot moved, a failover), whose
   * messages may have been missed meanwhile (SPEC §13.5). One Redis never
   * calls it: there a lost subscriber is a reconnection, and its up-listeners.
   */
  onResubscribed(listener: (channels: readonly string[]) => void): void {
    this.resubscribedListeners.push(listener);
  }

  /**
   * CLUSTER.md "Redis outage": a subscriber can look connected after a
   * failover and receive nothing. When it has heard nothing for `idleMs`,
   * publish a probe on `channel` (one this node listens to, whose handler
   * ignores it); no message within `timeoutMs` → reconnect the subscriber,
   * which resubscribes everything. With Sentinel, each tick also checks that
   * both connections are on the current primary (SPEC §13.2).
   */
  startProbe(channel: string, idleMs: number, timeoutMs: number): void {
    this.probe = new SilenceProbe({
      isUp: () => this.isUpNow,
      publishProbe: () => this.mode.publish(channel, 'probe'),
      reconnect: () => this.subscriber.disconnect(true),
      // Also while down: a resync can hang on a connection left on a silent former primary.
      onTick: () => void this.primary?.check(timeoutMs),
    });
    this.probe.start(idleMs, timeoutMs);
  }

  /** Listen to `channel` from now on, across reconnects; resolves when Redis acknowledged (at once while down). */
  async subscribe(channel: string): Promise<void> {
    this.channels.add(channel);
    if (!this.isUpNow) return;
    try {
      await this.timed('subscribe', this.subscriber.subscribe(channel));
    } catch (err) {
      // The link went down meanwhile: the resubscription after reconnect covers it.
      this.logger.debug({ msg: 'subscribe failed', error: (err as Error).message });
    }
  }

  /**
   * Resolves once every message of `channel` Redis sent this node before now
   * has reached the message listeners: a PING on the subscriber connection
   * that carries it, whose answer comes after them (one connection keeps
   * Redis' order).
   */
  async syncSubscriber(channel: string): Promise<void> {
    await this.timed('ping', this.mode.sync(channel));
  }

  /** PUBLISH (SPUBLISH on a Redis Cluster); resolves to the receivers Redis counted. */
  publish(channel: string, message: string | Buffer): Promise<number> {
    return this.mode.publish(channel, message);
  }

  /** The subscriber counts of `channels`, in order; on a Redis Cluster they must share one slot (control channels do). */
  countSubscribers(channels: readonly string[]): Promise<number[]> {
    return this.timed('pubsub', this.mode.countSubscribers(channels));
  }

  unsubscribe(channel: string): void {
    if (!this.channels.delete(channel) || !this.isUpNow) return;
    this.subscriber.unsubscribe(channel).catch(() => undefined);
  }

  /**
   * A Lua script as a function (EVALSHA, loading it on first use): the few
   * atomic multi-key steps of cluster mode. Timed under the script's name.
   * `keyCount` null: the number of keys varies, and is the length of `keys`.
   * Every script runs with a `#!lua` shebang (a read-only one declares
   * `#!lua flags=no-writes` itself), so that on a Redis Cluster Redis refuses
   * any key outside the slot of its declared keys (SPEC §13.3). On a Redis
   * Cluster, a script with an `instanceArg` runs only on a primary the
   * instance names (see link-modes.ts `clusterMode`).
   */
  script(
    name: string,
    keyCount: number | null,
    lua: string,
    /** The ARGV index (1-based) of the Redis instance the script compares with its data (SPEC §13.1), if any. */
    instanceArg?: number,
  ): ScriptSend {
    const { source, send } = this.mode.define(
      name,
      keyCount,
      lua.startsWith('#!') ? lua : `#!lua\n${lua}`,
      instanceArg,
    );
    this.scripts.set(name, source);
    return (keys, args) => this.timed(name, send(keys, args));
  }

  /**
   * SPEC §13.1 `REDIS_WAIT_REPLICAS`: resolves once the writes this node made
   * so far (on a Redis Cluster: to the primaries owning `partitions`, null
   * for control keys) reached that many replicas (`WAIT`);
   * ClusterUnavailableError (503) when they did not within REDIS_WAIT_TIMEOUT
   * (the write may still exist: the backend retries). At once when 0.
   */
  confirmWrites(partitions: ReadonlyArray<number | null>): Promise<void> {
    return this.wait.replicas === 0
      ? CONFIRMED
      : this.awaitReplicas(partitions, this.wait.replicas, this.wait.timeoutMs);
  }

  private async awaitReplicas(
    partitions: ReadonlyArray<number | null>,
    replicas: number,
    timeoutMs: number,
  ): Promise<void> {
    const confirmed = await this.timed('wait', this.mode.waitReplicas(partitions, replicas, timeoutMs)).catch(() => -1);
    if (confirmed < replicas)
      throw new ClusterUnavailableError(
        'cluster_unavailable',
        `the write was not confirmed by ${replicas} Redis replica(s) within ${timeoutMs} ms; retry`,
      );
  }

  /** Time a command's round trip into gateway_redis_command_duration_seconds. */
  async timed<T>(command: string, pending: Promise<T>): Promise<T> {
    const end = this.metrics.redisCommandDuration.startTimer({ command, shard: this.shard });
    try {
      return await pending;
    } finally {
      end();
    }
  }

  async close(): Promise<void> {
    this.isClosing = true;
    this.probe?.stop();
    await Promise.all([this.command.quit().catch(() => undefined), this.subscriber.quit().catch(() => undefined)]);
    this.command.disconnect();
    this.subscriber.disconnect();
  }

  private onReady(): void {
    if (this.command.status !== 'ready' || this.subscriber.status !== 'ready') return;
    if (this.resync !== null) {
      // The link went down and up again while the listeners of the last reconnection ran.
      this.isResyncAgain = true;
      return;
    }
    this.resync = this.resubscribeThenAnnounce().finally(() => this.afterResync());
  }

  private afterResync(): void {
    this.resync = null;
    if (!this.isResyncAgain) return;
    this.isResyncAgain = false;
    if (this.isUpNow) this.resyncNow();
    else this.onReady();
  }

  private async resubscribeThenAnnounce(): Promise<void> {
    try {
      const instance = await this.mode.readInstance();
      if (this.instanceNow !== '' && instance !== this.instanceNow) this.replacedAtMs = Date.now();
      this.instanceNow = instance;
      if (this.hasBeenUp) await this.settle();
      const all = [...this.channels];
      for (let i = 0; i < all.length; i += RESUBSCRIBE_BATCH) {
        await this.timed('subscribe', this.subscriber.subscribe(...all.slice(i, i + RESUBSCRIBE_BATCH)));
      }
    } catch (err) {
      this.logger.debug({ msg: 'resubscribe failed', error: (err as Error).message });
      return; // the connection dropped again; the next 'ready' retries
    }
    this.isUpNow = true;
    this.hasBeenUp = true;
    this.metrics.redisUp.labels(this.shard).set(1);
    this.causes.up();
    this.logger.log({ msg: 'redis up', redis: this.address, channels: this.channels.size });
    await this.announce();
  }

  private async settle(): Promise<void> {
    this.isSettlingNow = true;
    try {
      for (const listener of this.settleListeners) await this.runListener(listener);
    } finally {
      this.isSettlingNow = false;
    }
  }

  /** The up-listeners, in registration order (node liveness first: it registers before the features). */
  private async announce(): Promise<void> {
    for (const listener of this.upListeners) await this.runListener(listener);
  }

  private async runListener(listener: LinkUpListener): Promise<void> {
    try {
      await listener();
    } catch (err) {
      this.logger.warn({ msg: 'redis resync step failed', error: (err as Error).message });
    }
  }

  private onDown(role: string): void {
    if (!this.isUpNow) return;
    this.isUpNow = false;
    this.downAt = Date.now();
    this.metrics.redisUp.labels(this.shard).set(0);
    this.causes.down(role);
  }

  /**
   * A Redis Cluster's primaries changed (a failover, a primary added or
   * removed) or one restarted (its `run_id`): as for a Redis restart, data
   * written before may be behind what was acknowledged (SPEC §13.1), so the
   * instance changes (new epochs) and every up-listener re-asserts this
   * node's state. Only a change of the primaries' node ids is a failover.
   */
  private onPrimariesChanged(primaries: string): void {
    if (primaries === this.instanceNow) return;
    const nodeIds = (identities: string): string => identities.replace(/:[0-9a-f]*/g, '');
    const isFailover = nodeIds(primaries) !== nodeIds(this.instanceNow);
    this.replacedAtMs = Date.now();
    this.instanceNow = primaries;
    if (isFailover) this.metrics.redisFailovers.inc();
    this.logger.warn({
      msg: isFailover
        ? 'redis cluster primaries changed: re-asserting this node'
        : 'a redis cluster primary restarted: re-asserting this node',
      redis: this.address,
    });
    this.resyncNow();
  }

  /** The last connection error's cause (null: none yet), e.g. for the start-up line. */
  get lastCause(): string | null {
    return this.causes.lastCause;
  }
}
