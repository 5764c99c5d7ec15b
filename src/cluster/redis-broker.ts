import { Logger } from '@nestjs/common';
import { GatewayMetrics } from '../metrics/gateway-metrics';
import { nodeOfConnectionId } from '../protocol/connection-id';
import { Broker, ChannelListener, CommandHandler, ConnectionLocator, DataCodec } from './broker';
import {
  ChannelKind,
  ClusterNames,
  CommandEnvelope,
  decodeChannelMessage,
  decodeNodeMessage,
  encodeAcks,
  encodeChannelMessage,
  encodeCommands,
  originHead,
} from './channels';
import { ClusterUnavailableError } from './cluster-unavailable.error';
import { GONE, Whereabouts, heldBy, isMoved } from './whereabouts';
import { RedisLink } from './redis-link';
import { RedisShards } from './redis-shards';

/** SPEC §11: an owner that does not acknowledge within this time → 503 owner_unreachable. */
export const OWNER_ACK_TIMEOUT_MS = 5000;
/** CLUSTER.md: leave a channel at least this long after the last local interest, to absorb churn. */
export const LEAVE_DELAY_MS = 1000;
/** A subscriber silent this long gets a probe through the normal publish path... */
export const PROBE_IDLE_MS = 15_000;
/** ...which must come back within this time, else the subscriber is reconnected. */
export const PROBE_TIMEOUT_MS = 3000;

interface Registered {
  readonly handler: CommandHandler<unknown>;
  readonly codec: DataCodec<unknown> | undefined;
}

interface PendingRequest {
  /** The nodes that acknowledged it. */
  readonly ackedBy: Set<string>;
  /** The nodes whose acks it waits for; null until the command was published. */
  expected: ReadonlySet<string> | null;
  readonly resolve: () => void;
  readonly reject: (err: Error) => void;
}

/** Commands queued for one node channel during this tick: they leave together, in order. */
interface Outbox {
  readonly commands: CommandEnvelope[];
  /** The owner node, or null for the every-node channel. */
  readonly owner: string | null;
}

interface JoinedChannel {
  readonly kind: ChannelKind;
  readonly name: string;
  subscribed: Promise<void>;
  leaveTimer: NodeJS.Timeout | null;
}

const KIND_LABELS: Readonly<Record<ChannelKind, string>> = { t: 'topic', l: 'lattice', u: 'user' };

/**
 * The Redis transport of the {@link Broker} seam (SPEC §11, CLUSTER.md).
 * - Commands for a connection go to its owner's node channel with a request
 *   id and resolve on the owner's ack (its effect is then in place); commands
 *   for every node go on the shared channel and resolve once every node
 *   listed in the registry whose own channel has a subscriber (its link to
 *   Redis is up) acknowledged: acks are counted by node, never by the number
 *   of receivers `PUBLISH` returns (on a Redis Cluster that number covers one
 *   Redis node only). That number serves one shortcut: none on an owner's
 *   channel, and the owner is checked at once: gone (no liveness key), the
 *   command follows its session or resolves as for any unknown connection;
 *   alive, its ack is awaited all the same. Commands for one channel issued
 *   in the same tick (e.g. a `/v1/batch`) travel in one message.
 * - Data channels are joined only while this node has local interest; a
 *   message carries its origin node so a node skips its own.
 */
export class RedisBroker extends Broker {
  private readonly logger = new Logger(RedisBroker.name);
  private readonly handlers = new Map<string, Registered>();
  private readonly listeners = new Map<ChannelKind, ChannelListener>();
  private readonly joined = new Map<string, JoinedChannel>();
  private readonly pending = new Map<number, PendingRequest>();
  private readonly outboxes = new Map<string, Outbox>();
  private readonly ackTimers = new Set<NodeJS.Timeout>();
  private readonly head: Buffer;
  private readonly ownChannel: string;
  private nextRequestId = 1;
  private locator: ConnectionLocator | null = null;
  private readonly counters;

  /** The control instance: node channels, the every-node channel, the registry. */
  private readonly link: RedisLink;

  constructor(
    /** Data channels live on their partition's link (SPEC §13.4). */
    private readonly shards: RedisShards,
    private readonly names: ClusterNames,
    private readonly nodeId: string,
    metrics: GatewayMetrics,
    /** SPEC §11's 5 s; shorter only in the broker's own spec, which waits it out four times. */
    private readonly ackTimeoutMs = OWNER_ACK_TIMEOUT_MS,
  ) {
    super();
    this.link = shards.control;
    this.head = originHead(nodeId);
    this.ownChannel = names.node(nodeId);
    const out = (kind: string) => metrics.brokerMessages.labels('out', kind);
    const into = (kind: string) => metrics.brokerMessages.labels('in', kind);
    this.counters = {
      commandOut: out('command'),
      commandIn: into('command'),
      ackOut: out('ack'),
      ackIn: into('ack'),
      channelOut: { t: out('topic'), l: out('lattice'), u: out('user') },
      channelIn: { t: into('topic'), l: into('lattice'), u: into('user') },
      dropped: metrics.brokerMessagesDropped,
    };
    for (const link of shards.all) link.onMessage((channel, message) => this.onMessage(channel, message));
  }

  /** Subscribe this node's own channels (before the node serves anything) and probe a silent subscriber. */
  async start(probe = { idleMs: PROBE_IDLE_MS, timeoutMs: PROBE_TIMEOUT_MS }): Promise<void> {
    await this.link.subscribe(this.names.everyNode);
    // Each link is probed on this node's own channel (a shard's copy of it carries only the probes).
    for (const link of this.shards.all) {
      await link.subscribe(this.ownChannel);
      link.startProbe(this.ownChannel, probe.idleMs, probe.timeoutMs);
    }
  }

  handle<T>(kind: string, handler: CommandHandler<T>, codec?: DataCodec<T>): void {
    this.handlers.set(kind, {
      handler: handler as CommandHandler<unknown>,
      codec: codec as DataCodec<unknown> | undefined,
    });
  }

  override locate(locator: ConnectionLocator): void {
    this.locator = locator;
  }

  toOwner<T>(kind: string, connectionId: string, data: T): Promise<void> {
    const owner = nodeOfConnectionId(connectionId);
    if (owner === null) return this.applied(kind, connectionId, data);
    if (owner === this.nodeId || this.locator?.isHere(connectionId)) return this.applyHeld(kind, connectionId, data);
    this.assertUp();
    return this.enqueue(this.names.node(owner), owner, kind, connectionId, data);
  }

  async toEveryNode<T>(kind: string, target: string, data: T): Promise<void> {
    this.assertUp();
    // This node is one of the receivers and skips its own message: it applies the command here instead.
    await Promise.all([
      this.enqueue(this.names.everyNode, null, kind, target, data),
      this.applyLocal(kind, target, data),
    ]);
  }

  toNode<T>(kind: string, nodeId: string, target: string, data: T): Promise<void> {
    if (nodeId === this.nodeId) return this.applied(kind, target, data);
    this.assertUp();
    return this.enqueue(this.names.node(nodeId), nodeId, kind, target, data);
  }

  notify<T>(kind: string, nodeId: string, target: string, data: T): void {
    if (nodeId === this.nodeId) return void this.applyLocal(kind, target, data).catch(() => undefined);
    const codec = this.handlers.get(kind)?.codec;
    // Request id 0: the receiver sends no ack.
    const notice = encodeCommands(this.nodeId, [[kind, target, codec === undefined ? data : codec.encode(data), 0]]);
    this.link.publish(this.names.node(nodeId), notice).catch(() => undefined);
    this.counters.commandOut.inc();
  }

  listen(kind: ChannelKind, listener: ChannelListener): void {
    this.listeners.set(kind, listener);
  }

  join(kind: ChannelKind, name: string): Promise<void> {
    const channel = this.names.channel(kind, name);
    const held = this.joined.get(channel);
    if (held !== undefined) {
      if (held.leaveTimer !== null) clearTimeout(held.leaveTimer);
      held.leaveTimer = null;
      return held.subscribed;
    }
    const subscribed = this.shards.forKey(channel).subscribe(channel);
    const joined: JoinedChannel = { kind, name, subscribed, leaveTimer: null };
    this.joined.set(channel, joined);
    return joined.subscribed;
  }

  leave(kind: ChannelKind, name: string): void {
    const channel = this.names.channel(kind, name);
    const held = this.joined.get(channel);
    if (held === undefined || held.leaveTimer !== null) return;
    held.leaveTimer = setTimeout(() => {
      this.joined.delete(channel);
      this.shards.forKey(channel).unsubscribe(channel);
    }, LEAVE_DELAY_MS);
    held.leaveTimer.unref();
  }

  send(kind: ChannelKind, name: string, payload: Buffer): void {
    const channel = this.names.channel(kind, name);
    const link = this.shards.forKey(channel);
    if (!link.isUp) return void this.counters.dropped.inc();
    const message = encodeChannelMessage(this.head, payload);
    link.publish(channel, message).catch(() => this.counters.dropped.inc());
    this.counters.channelOut[kind].inc();
  }

  /** Stop timers (app shutdown). */
  override stop(): void {
    for (const held of this.joined.values()) if (held.leaveTimer !== null) clearTimeout(held.leaveTimer);
    for (const timer of this.ackTimers) clearTimeout(timer);
  }

  /**
   * A command for a connection this node owns by its id, or holds: applied
   * here, unless its session moved to another node (SPEC §12.5), which then
   * gets it: the holder of record wins.
   */
  private async applyHeld(kind: string, connectionId: string, data: unknown): Promise<void> {
    const locator = this.locator;
    if (locator !== null && !locator.isHere(connectionId))
      return this.toHolder(kind, connectionId, data, await this.whereIs(locator, connectionId));
    const result = await this.applyLocal(kind, connectionId, data);
    // Applied to a copy that another node took over an instant ago: that node gets it too.
    if (isMoved(result)) return this.toHolder(kind, connectionId, data, heldBy(result.node));
  }

  /** Where a session is; unreadable (Redis down): as gone, so the command applies here (a no-op for an unknown id). */
  private whereIs(locator: ConnectionLocator, connectionId: string): Promise<Whereabouts> {
    return locator.whereIs(connectionId).catch(() => GONE);
  }

  /** Send a command to the node holding its session; held by none: applied to the session's record. */
  private async toHolder(kind: string, connectionId: string, data: unknown, where: Whereabouts): Promise<void> {
    if (where.kind === 'orphaned') where = await this.locator!.applyToRecord(kind, connectionId, data);
    if (where.kind !== 'held' || where.node === this.nodeId) return this.applied(kind, connectionId, data);
    this.assertUp();
    return this.enqueue(this.names.node(where.node), where.node, kind, connectionId, data);
  }

  private decode(kind: string, json: unknown): unknown {
    const codec = this.handlers.get(kind)?.codec;
    return codec === undefined ? json : codec.decode(json);
  }

  /** Applied here, wherever its session may be (a command for a node, or one without an owner). */
  private async applied(kind: string, target: string, data: unknown): Promise<void> {
    await this.applyLocal(kind, target, data);
  }

  /** Resolves to what the handler resolved to: undefined, or its session's {@link Moved}. */
  private applyLocal(kind: string, target: string, data: unknown): Promise<unknown> {
    const registered = this.handlers.get(kind);
    if (registered === undefined) throw new Error(`no handler for ${kind}`);
    return Promise.resolve(registered.handler(target, data));
  }

  private assertUp(): void {
    if (!this.link.isUp)
      throw new ClusterUnavailableError('cluster_unavailable', 'Redis is not reachable from this node; retry');
  }

  /** Queue a command for `channel`; the first of a tick schedules the flush. Resolves on its acks. */
  private enqueue(channel: string, owner: string | null, kind: string, target: string, data: unknown): Promise<void> {
    const codec = this.handlers.get(kind)?.codec;
    const id = this.nextRequestId++;
    let outbox = this.outboxes.get(channel);
    if (outbox === undefined) {
      this.outboxes.set(channel, (outbox = { commands: [], owner }));
      queueMicrotask(() => void this.flush(channel));
    }
    outbox.commands.push([kind, target, codec === undefined ? data : codec.encode(data), id]);
    return new Promise<void>((resolve, reject) =>
      this.pending.set(id, { ackedBy: new Set(), expected: null, resolve, reject }),
    );
  }

  /** Publish a tick's commands for one channel in one message, then wait for their acks (5 s). */
  private async flush(channel: string): Promise<void> {
    const { commands, owner } = this.outboxes.get(channel)!;
    this.outboxes.delete(channel);
    const ids = commands.map((command) => command[3]);
    const message = encodeCommands(this.nodeId, commands);
    try {
      if (owner === null) return this.awaitAcks(ids, await this.publishToEveryNode(message), 'every node');
      const receivers = await this.link.timed('publish', this.link.publish(channel, message));
      this.counters.commandOut.inc();
      if (receivers > 0) return this.awaitAcks(ids, new Set([owner]), `node ${owner}`);
    } catch {
      return this.finish(
        ids,
        new ClusterUnavailableError('cluster_unavailable', 'Redis is not reachable from this node; retry'),
      );
    }
    // Nobody counted: the owner is gone, cut off, or not counted (a PUBLISH on a Redis Cluster counts the
    // receivers on the Redis node it reached only). Alive, it is waited for as if counted; gone, each command
    // follows its connection to the node holding it now, if another one does, else it ends as for an unknown id.
    for (const [kind, target, json, id] of commands) {
      this.routeUncounted(kind, target, json, owner).then(
        (isWaited) => (isWaited ? this.awaitAcks([id], new Set([owner]), `node ${owner}`) : this.finish([id], null)),
        (err: Error) => this.finish([id], err),
      );
    }
  }

  /**
   * Publish on the every-node channel; resolves to the nodes whose acks to
   * wait for: those listed in the registry (read before the publish, in the
   * same pipeline) whose own channel has a subscriber, this node aside (it
   * skips its own message and applies the command itself).
   */
  private async publishToEveryNode(message: Buffer | string): Promise<ReadonlySet<string>> {
    const [listed] = await this.link.timed(
      'publish',
      Promise.all([this.link.command.smembers(this.names.nodes), this.link.publish(this.names.everyNode, message)]),
    );
    this.counters.commandOut.inc();
    const others = listed.filter((node) => node !== this.nodeId);
    if (others.length === 0) return new Set();
    const counts = await this.link.countSubscribers(others.map((node) => this.names.node(node)));
    return new Set(others.filter((_, i) => counts[i] > 0));
  }

  /** Wait for the acks of `expected` nodes on each of `ids` (5 s), then fail them with 503 owner_unreachable. */
  private awaitAcks(ids: readonly number[], expected: ReadonlySet<string>, who: string): void {
    for (const id of ids) {
      const request = this.pending.get(id);
      if (request === undefined) continue;
      request.expected = expected;
      if (isAckedByAll(request)) this.finish([id], null);
    }
    if (ids.every((id) => !this.pending.has(id))) return;
    const timer = setTimeout(() => {
      this.ackTimers.delete(timer);
      this.finish(
        ids,
        new ClusterUnavailableError(
          'owner_unreachable',
          `${who} did not acknowledge within ${this.ackTimeoutMs} ms; retry`,
        ),
      );
    }, this.ackTimeoutMs);
    timer.unref();
    this.ackTimers.add(timer);
  }

  /**
   * A command published on `owner`'s channel that no receiver was counted
   * for. True: the owner is alive, so its ack is waited for. Else settled
   * here: sent on to the node holding the session now, or done (no such
   * connection any more).
   */
  private async routeUncounted(kind: string, target: string, json: unknown, owner: string): Promise<boolean> {
    if (this.locator !== null) {
      // SPEC §12.5: its session may live on another node now.
      const where = await this.whereIs(this.locator, target);
      if (where.kind === 'orphaned' || (where.kind === 'held' && where.node !== owner)) {
        await this.toHolder(kind, target, this.decode(kind, json), where);
        return false;
      }
    }
    return this.isAlive(owner);
  }

  /** Whether `node`'s liveness key is there; an unreadable one counts as alive (never a false "gone"). */
  private isAlive(node: string): Promise<boolean> {
    return this.link.command.exists(this.names.alive(node)).then(
      (n) => n === 1,
      () => true,
    );
  }

  /** Settle the still-pending requests among `ids`: resolved, or rejected with `error`. */
  private finish(ids: readonly number[], error: Error | null): void {
    for (const id of ids) {
      const request = this.pending.get(id);
      if (request === undefined) continue;
      this.pending.delete(id);
      if (error === null) request.resolve();
      else request.reject(error);
    }
  }

  private onMessage(channel: string, message: Buffer): void {
    if (channel === this.ownChannel || channel === this.names.everyNode)
      return this.onNodeMessage(message, channel === this.names.everyNode);
    const held = this.joined.get(channel);
    if (held === undefined) return;
    const decoded = decodeChannelMessage(message);
    if (decoded === null || decoded.origin === this.nodeId) return;
    this.counters.channelIn[held.kind].inc();
    this.listeners.get(held.kind)?.(held.name, decoded.payload);
  }

  private onNodeMessage(message: Buffer, isEveryNode: boolean): void {
    const decoded = decodeNodeMessage(message.toString('utf8'));
    if (decoded === null) return;
    if ('a' in decoded) return this.onAcks(decoded.f, decoded.a, decoded.e);
    if (decoded.f === this.nodeId) return; // our own commands to every node, applied locally already
    this.counters.commandIn.inc();
    void this.runRemote(decoded.f, decoded.c, !isEveryNode);
  }

  private onAcks(from: string, ids: readonly number[], failed: readonly number[]): void {
    this.counters.ackIn.inc();
    if (failed.length > 0)
      this.finish(
        failed,
        new ClusterUnavailableError('cluster_unavailable', `node ${from} could not apply the command; retry`),
      );
    for (const id of ids) {
      const request = this.pending.get(id);
      if (request === undefined) continue;
      request.ackedBy.add(from);
      if (isAckedByAll(request)) this.finish([id], null);
    }
  }

  /**
   * Start every command in order, then ack them all in one message once each
   * took effect; those that failed are named as such, so their /v1 call
   * answers 503 rather than 204 (e.g. a command passed on to the session's
   * new holder, which did not answer). Request id 0 wants no ack (a notice,
   * e.g. a session taken over, published by a script).
   */
  private async runRemote(from: string, commands: readonly CommandEnvelope[], isToOwner: boolean): Promise<void> {
    const outcomes = await Promise.all(
      commands.map(([kind, target, json, id]) => this.runOne(from, kind, target, json, isToOwner && id !== 0)),
    );
    const ids = commands.map((command) => command[3]).filter((id) => id !== 0);
    if (ids.length === 0) return;
    const failed = commands.filter((command, i) => command[3] !== 0 && !outcomes[i]).map((command) => command[3]);
    this.link.publish(this.names.node(from), encodeAcks(this.nodeId, ids, failed)).catch(() => undefined);
    this.counters.ackOut.inc();
  }

  /** Runs one remote command; false when it failed (logged). */
  private async runOne(
    from: string,
    kind: string,
    target: string,
    json: unknown,
    isToOwner: boolean,
  ): Promise<boolean> {
    const registered = this.handlers.get(kind);
    try {
      if (registered === undefined) throw new Error(`no handler for ${kind}`);
      const data = registered.codec === undefined ? json : registered.codec.decode(json);
      // A command for a connection: it may have moved on to another node since (SPEC §12.5).
      await (isToOwner && this.locator !== null
        ? this.applyHeld(kind, target, data)
        : registered.handler(target, data));
      return true;
    } catch (err) {
      this.logger.warn({ msg: 'remote command failed', kind, from, error: (err as Error).message });
      return false;
    }
  }
}

/** Whether every node a published request waits for acknowledged it. */
function isAckedByAll(request: PendingRequest): boolean {
  if (request.expected === null) return false;
  for (const node of request.expected) if (!request.ackedBy.has(node)) return false;
  return true;
}
