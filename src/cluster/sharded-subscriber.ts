import { Logger } from '@nestjs/common';
import Redis, { RedisOptions } from 'ioredis';
import { KEY_SLOTS, keySlot } from './partition-tags';

/** A Redis Cluster node address. */
export interface RedisAddress {
  readonly host: string;
  readonly port: number;
}

/** How often the slot map (and each primary's `run_id`) is re-read by default, to notice a failover or a restart. */
const SLOT_CHECK_MS = 1000;
/** Retry backoff while a channel has no confirmed owner: 50 ms doubling, at most this. */
const MAX_RETRY_MS = 200;
/** Bound on one SSUBSCRIBE answer; the link is closed after it. */
const SSUBSCRIBE_TIMEOUT_MS = 2000;

/** A subscriber connection to one primary, and whether it still counts. */
interface Link {
  readonly redis: Redis;
  live: boolean;
  /** Rejects when the connection closes: ends a command ioredis would leave unsettled. */
  readonly closed: Promise<never>;
}

/** Where a channel is subscribed: the primary's `host:port`, or null while it waits for one. */
interface Placement {
  on: string | null;
  /** Was it confirmed somewhere before (a later placement is a resubscribe, with a possible gap). */
  placedBefore: boolean;
  waiters: Array<{ resolve: () => void; reject: (err: Error) => void }>;
}

/**
 * Sharded pub/sub on a Redis Cluster (SPEC §13.5) without ioredis's own
 * sharded subscribers, which stop delivering after a slot migration (see
 * test/spikes/README.md). One plain subscriber connection per primary that
 * owns a subscribed channel's slot; only SSUBSCRIBE and SUNSUBSCRIBE are ever
 * in flight on it, so a server-pushed `sunsubscribe` shows up as ioredis's
 * "Command queue state error" and cannot resolve a command of ours. When a
 * connection closes, Redis pushes `sunsubscribe`, or SSUBSCRIBE answers
 * MOVED, the slot map is read again and the affected channels are
 * re-subscribed on their owner, retried with a bounded backoff; the slot map
 * is also checked every second so a failover is noticed.
 */
export class ShardedSubscriber {
  private readonly logger = new Logger(ShardedSubscriber.name);
  private readonly options: RedisOptions;
  /** Every node's `host:port` seen so far, seeds first: where the slot map is read. */
  private readonly known: Set<string>;
  /** Slot → owning primary's `host:port` ('' when unserved), as last read. */
  private owners: string[] = [];
  private readonly channels = new Map<string, Placement>();
  private readonly links = new Map<string, Promise<Link>>();
  private command: Redis | null = null;
  private readonly messageListeners: Array<(channel: string, message: Buffer) => void> = [];
  private readonly resubscribedListeners: Array<(channels: string[]) => void> = [];
  private readonly primariesListeners: Array<(primaries: string) => void> = [];
  /** The primaries serving slots as last read: `host:port` → node id. */
  private primaryIds = new Map<string, string>();
  /** Each primary's `run_id` as last read (`host:port` → run_id): another after a restart (SPEC §13.1). */
  private readonly runIds = new Map<string, string>();
  /** Whether each primary answered `INFO server` at the last read (`host:port` → answered). */
  private readonly answered = new Map<string, boolean>();
  /** A command connection per primary, for `INFO server` (a subscriber connection cannot ask). */
  private readonly infoConnections = new Map<string, Redis>();
  /** The primaries' identities, `<node id>:<run_id>` each (12 hex digits of both), sorted and joined ('' before the first read). */
  private primariesNow = '';
  private healing: Promise<void> | null = null;
  private healAgain = false;
  private checkTimer: NodeJS.Timeout | null = null;
  /** A periodic check runs (a primary that does not answer can hold one past the period). */
  private isChecking = false;
  private closed = false;

  /**
   * `seeds`: any cluster nodes; `options`: ioredis options for every connection (TLS, auth, name);
   * `slotCheckMs`: period of the slot-map check.
   */
  constructor(
    seeds: readonly RedisAddress[],
    options: RedisOptions = {},
    private readonly slotCheckMs = SLOT_CHECK_MS,
  ) {
    this.known = new Set(seeds.map((a) => `${a.host}:${a.port}`));
    this.options = {
      ...options,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      autoResubscribe: false,
      lazyConnect: true,
      connectTimeout: options.connectTimeout ?? 1000,
      retryStrategy: () => null,
    };
  }

  /** Read the slot map (rejects when no known node answers) and start the periodic check. */
  async start(): Promise<void> {
    await this.refreshSlots();
    this.checkTimer = setInterval(() => void this.checkSlots(), this.slotCheckMs);
    this.checkTimer.unref();
  }

  /** Resolves once SSUBSCRIBE is confirmed on the primary owning `channel`'s slot; rejects if unsubscribed or closed first. */
  subscribe(channel: string): Promise<void> {
    if (this.closed) return Promise.reject(new Error('ShardedSubscriber is closed'));
    let placement = this.channels.get(channel);
    if (placement === undefined) {
      placement = { on: null, placedBefore: false, waiters: [] };
      this.channels.set(channel, placement);
    }
    if (placement.on !== null) return Promise.resolve();
    const waiting = new Promise<void>((resolve, reject) => placement.waiters.push({ resolve, reject }));
    this.heal();
    return waiting;
  }

  /** Stop delivering `channel`; SUNSUBSCRIBE on its primary is best effort. */
  async unsubscribe(channel: string): Promise<void> {
    const placement = this.channels.get(channel);
    if (placement === undefined) return;
    this.channels.delete(channel);
    for (const waiter of placement.waiters) waiter.reject(new Error(`unsubscribed from ${channel}`));
    if (placement.on !== null) await this.leave(placement.on, channel);
  }

  /** `listener` gets every message of a subscribed channel (the payload as sent). */
  onMessage(listener: (channel: string, message: Buffer) => void): void {
    this.messageListeners.push(listener);
  }

  /** `listener` gets channels re-subscribed on another connection: messages may have been missed meanwhile. */
  onResubscribed(listener: (channels: string[]) => void): void {
    this.resubscribedListeners.push(listener);
  }

  /**
   * `listener` gets the primaries' identities ({@link primaries}) each time
   * they change: a failover, a primary added or removed, or a primary that
   * restarted (its `run_id`: it may have come back from an older snapshot,
   * SPEC §13.1). Not called for the first read.
   */
  onPrimariesChanged(listener: (primaries: string) => void): void {
    this.primariesListeners.push(listener);
  }

  /**
   * The primaries serving slots as last read, each as the first 12 hex
   * digits of its node id, a colon and the first 12 of its `run_id`
   * (sorted, space-separated): a script's primary guard finds its own node
   * id in it (RedisLink).
   */
  get primaries(): string {
    return this.primariesNow;
  }

  /**
   * Resolves once every message the primary owning `channel` sent this node
   * before now was delivered (a PING behind them on the same connection); at
   * once when the channel is not placed (nothing to wait for).
   */
  async sync(channel: string): Promise<void> {
    const on = this.channels.get(channel)?.on;
    if (on === null || on === undefined) return;
    const link = await this.links.get(on)?.catch(() => null);
    if (!link?.live) return;
    await Promise.race([link.redis.ping(), link.closed]);
  }

  /** Close every connection; pending subscribes reject. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.checkTimer !== null) clearInterval(this.checkTimer);
    for (const [channel, placement] of this.channels)
      for (const waiter of placement.waiters) waiter.reject(new Error(`closed before ${channel} was subscribed`));
    this.channels.clear();
    await this.disconnectAll();
    // A placement round or a check in flight may have opened a connection meanwhile: it ends with them.
    await this.healing;
    await this.disconnectAll();
  }

  private async disconnectAll(): Promise<void> {
    const links = await Promise.allSettled([...this.links.values()]);
    this.links.clear();
    for (const link of links) if (link.status === 'fulfilled') link.value.redis.disconnect();
    for (const connection of this.infoConnections.values()) connection.disconnect();
    this.infoConnections.clear();
    this.command?.disconnect();
    this.command = null;
  }

  /** Run placement rounds until no channel waits for an owner (one loop at a time). */
  private heal(): void {
    if (this.healing !== null) {
      this.healAgain = true;
      return;
    }
    this.healing = this.healLoop().finally(() => (this.healing = null));
  }

  private async healLoop(): Promise<void> {
    for (let attempt = 0; !this.closed; attempt++) {
      this.healAgain = false;
      await this.placePending().catch((err: Error) => this.logger.debug(`placing channels failed: ${err.message}`));
      const waiting = [...this.channels.values()].some((p) => p.on === null);
      if (!waiting && !this.healAgain) return;
      if (attempt === 10) this.logger.warn('sharded channels still without a subscribed primary after 10 tries');
      if (waiting) await new Promise((resolve) => setTimeout(resolve, Math.min(50 * 2 ** attempt, MAX_RETRY_MS)));
    }
  }

  /** One round: read the slot map, SSUBSCRIBE each waiting slot's channels on its owner. */
  private async placePending(): Promise<void> {
    await this.refreshSlots();
    if (this.closed) return;
    const bySlot = new Map<number, string[]>();
    for (const [channel, placement] of this.channels)
      if (placement.on === null) bySlot.set(keySlot(channel), [...(bySlot.get(keySlot(channel)) ?? []), channel]);
    const moved: string[] = [];
    const rounds = [...bySlot].map(async ([slot, channels]) => {
      const owner = this.owners[slot];
      if (!owner) throw new Error(`slot ${slot} has no owner`);
      const link = await this.linkTo(owner);
      // SSUBSCRIBE takes channels of one slot only (CROSSSLOT otherwise).
      const timer = setTimeout(() => link.redis.disconnect(), SSUBSCRIBE_TIMEOUT_MS);
      await Promise.race([link.redis.ssubscribe(...channels), link.closed]).finally(() => clearTimeout(timer));
      if (!link.live) return; // a push or close raced the answer: the next round places them again
      for (const channel of channels) {
        const placement = this.channels.get(channel);
        if (placement === undefined || placement.on !== null) continue;
        placement.on = owner;
        if (placement.placedBefore) moved.push(channel);
        placement.placedBefore = true;
        for (const waiter of placement.waiters.splice(0)) waiter.resolve();
      }
      const dropped = channels.filter((channel) => !this.channels.has(channel)); // unsubscribed meanwhile
      if (dropped.length > 0) await link.redis.sunsubscribe(...dropped).catch(() => link.redis.disconnect());
    });
    const failures = (await Promise.allSettled(rounds)).filter((r) => r.status === 'rejected');
    if (failures.length > 0) this.logger.debug(`SSUBSCRIBE failed on ${failures.length} slot(s), retrying`);
    if (moved.length > 0) {
      this.logger.debug(`re-subscribed ${moved.length} sharded channel(s)`);
      for (const listener of this.resubscribedListeners) listener(moved);
    }
  }

  /** The connected subscriber link to `address` (`host:port`), opened on first use. */
  private linkTo(address: string): Promise<Link> {
    let link = this.links.get(address);
    if (link === undefined) {
      link = this.openLink(address);
      this.links.set(address, link);
      link.catch(() => this.links.get(address) === link && this.links.delete(address));
    }
    return link;
  }

  private async openLink(address: string): Promise<Link> {
    const redis = new Redis({ ...this.options, ...addressOf(address) });
    let onClose: (err: Error) => void = () => undefined;
    const closed = new Promise<never>((_, reject) => (onClose = reject));
    closed.catch(() => undefined);
    const link: Link = { redis, live: true, closed };
    redis.on('smessageBuffer', (channel: Buffer, message: Buffer) => {
      const name = channel.toString();
      if (this.channels.get(name)?.on !== address) return; // a stale subscription elsewhere
      for (const listener of this.messageListeners) listener(name, message);
    });
    redis.on('error', (err: Error) => {
      // Redis pushed sunsubscribe (the slot moved away): ioredis reports it only as this error.
      if (err.message.includes('Command queue state error')) redis.disconnect();
      else this.logger.debug(`sharded subscriber ${address}: ${err.message}`);
    });
    // ioredis drops an SSUBSCRIBE answered MOVED without settling it: closing the link rejects `closed`.
    redis.on('moved', () => redis.disconnect());
    redis.once('close', () => {
      onClose(new Error(`subscriber connection to ${address} closed`));
      this.dropLink(address, link);
    });
    await redis.connect();
    return link;
  }

  /** `link` closed: its channels wait for an owner again (unless {@link leave} retired it, empty). */
  private dropLink(address: string, link: Link): void {
    if (!link.live) return;
    link.live = false;
    void this.links.get(address)?.then(
      (current) => current === link && this.links.delete(address),
      () => undefined,
    );
    let affected = 0;
    for (const placement of this.channels.values())
      if (placement.on === address) {
        placement.on = null;
        affected++;
      }
    if (affected > 0 && !this.closed) {
      this.logger.debug(`sharded subscriber ${address} closed; re-subscribing ${affected} channel(s)`);
      this.heal();
    }
  }

  /** SUNSUBSCRIBE `channel` on `address` (best effort); close the link once it holds nothing. */
  private async leave(address: string, channel: string): Promise<void> {
    const link = await this.links.get(address)?.catch(() => null);
    if (!link?.live) return;
    if (![...this.channels.values()].some((p) => p.on === address)) {
      link.live = false;
      this.links.delete(address);
      link.redis.disconnect();
      return;
    }
    await link.redis.sunsubscribe(channel).catch(() => link.redis.disconnect());
  }

  /** Periodic: a primary changed or restarted is heard of; channels whose slot now has another owner are moved there. */
  private async checkSlots(): Promise<void> {
    if (this.isChecking || this.closed) return;
    this.isChecking = true;
    try {
      await this.refreshSlots(true);
    } catch (err) {
      this.logger.debug(`slot map check failed: ${(err as Error).message}`);
      return;
    } finally {
      this.isChecking = false;
    }
    if (this.healing !== null) return; // the heal loop places what waits, reading the slot map itself
    const stale = [...this.channels].filter(([channel, p]) => p.on !== null && p.on !== this.owners[keySlot(channel)]);
    for (const [channel, placement] of stale) {
      const from = placement.on!;
      placement.on = null;
      void this.leave(from, channel);
    }
    if (stale.length > 0) this.heal();
  }

  /**
   * Read the slot map and every primary's `run_id` now (rejects when no known
   * node answers); `onPrimariesChanged` listeners hear of a change.
   */
  refresh(): Promise<void> {
    return this.refreshSlots(true);
  }

  /**
   * Read CLUSTER SLOTS from the first known node that answers, then the
   * `run_id` of each primary: of every one with `everyRunId`, else of those
   * not read before (a placement round asks only what it must).
   */
  private async refreshSlots(everyRunId = false): Promise<void> {
    await this.readSlots();
    const primaries = [...this.primaryIds.keys()];
    await Promise.all(
      primaries.filter((address) => everyRunId || !this.runIds.has(address)).map((address) => this.readRunId(address)),
    );
    for (const [address, connection] of this.infoConnections)
      if (!this.primaryIds.has(address)) {
        connection.disconnect();
        this.infoConnections.delete(address);
        this.runIds.delete(address);
      }
    for (const address of this.answered.keys()) if (!this.primaryIds.has(address)) this.answered.delete(address);
    const now = primaries
      .map(
        (address) => `${this.primaryIds.get(address)!.slice(0, 12)}:${(this.runIds.get(address) ?? '').slice(0, 12)}`,
      )
      .sort()
      .join(' ');
    if (now === this.primariesNow) return;
    const isFirst = this.primariesNow === '';
    this.primariesNow = now;
    if (!isFirst) for (const listener of this.primariesListeners) listener(now);
  }

  /**
   * `run_id` of the primary at `address`, into {@link runIds}: asked on the
   * connection kept for it, then once on a new one (the kept one may be a
   * restarted primary's old connection); a primary that does not answer
   * keeps the last one read.
   */
  private async readRunId(address: string): Promise<void> {
    for (let attempt = 0; attempt < 2 && !this.closed; attempt++) {
      let connection = this.infoConnections.get(address);
      try {
        if (connection === undefined || connection.status === 'end') {
          connection = new Redis({ ...this.options, ...addressOf(address) });
          connection.on('error', () => undefined); // a primary down is what the slot map and the next check say
          this.infoConnections.set(address, connection);
          await connection.connect();
        }
        if (this.closed) connection.disconnect(); // closed while it connected: close() could not see it
        const runId = /^run_id:([0-9a-f]+)\r?$/m.exec(await connection.info('server'))?.[1];
        if (runId !== undefined) this.runIds.set(address, runId);
        this.answered.set(address, true);
        return;
      } catch {
        connection?.disconnect();
        if (this.infoConnections.get(address) === connection) this.infoConnections.delete(address);
      }
    }
    this.answered.set(address, false);
  }

  /** Each primary serving slots (`host:port`, sorted) and whether it answered at the last check (every second). */
  get primaryStates(): ReadonlyArray<readonly [address: string, isUp: boolean]> {
    return [...this.primaryIds.keys()].sort().map((address) => [address, this.answered.get(address) ?? false]);
  }

  /** Read CLUSTER SLOTS from the first known node that answers. */
  private async readSlots(): Promise<void> {
    for (const address of [...this.known]) {
      if (this.closed) break; // a check that began before close() opens nothing after it
      try {
        if (this.command === null) {
          this.command = new Redis({ ...this.options, ...addressOf(address) });
          this.command.on('error', () => undefined); // a failed node is tried next; the reason is not news
          await this.command.connect();
        }
        this.learn((await this.command.call('CLUSTER', 'SLOTS')) as SlotsReply);
        return;
      } catch {
        this.command?.disconnect();
        this.command = null;
      }
    }
    throw new Error('no known cluster node answers CLUSTER SLOTS');
  }

  private learn(reply: SlotsReply): void {
    const owners = new Array<string>(KEY_SLOTS).fill('');
    const primaryIds = new Map<string, string>();
    for (const [first, last, ...nodes] of reply) {
      for (const [host, port] of nodes) this.known.add(`${host}:${port}`);
      const address = `${nodes[0][0]}:${nodes[0][1]}`;
      owners.fill(address, first, last + 1);
      primaryIds.set(address, String(nodes[0][2] ?? address));
    }
    this.owners = owners;
    this.primaryIds = primaryIds;
  }
}

type SlotsReply = Array<[number, number, ...Array<[string, number, ...unknown[]]>]>;

function addressOf(key: string): RedisAddress {
  const colon = key.lastIndexOf(':');
  return { host: key.slice(0, colon), port: Number(key.slice(colon + 1)) };
}
