import { Logger } from '@nestjs/common';
import { GatewayMetrics } from '../metrics/gateway-metrics';
import { nodeOfConnectionId } from '../protocol/connection-id';
import { Broker, ChannelListener, CommandHandler, DataCodec } from './broker';
import {
  AckEnvelope,
  ChannelKind,
  ClusterNames,
  CommandEnvelope,
  decodeChannelMessage,
  decodeNodeMessage,
  encodeChannelMessage,
  isAck,
  originHead,
} from './channels';
import { ClusterUnavailableError } from './cluster-unavailable.error';
import { RedisLink } from './redis-link';

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
  acked: number;
  /** Receivers Redis counted; null until the PUBLISH answered. */
  expected: number | null;
  readonly resolve: () => void;
  timer: NodeJS.Timeout | null;
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
 *   for every node go on the shared channel and wait for as many acks as Redis
 *   counted receivers. No receiver on an owner's channel = the owner is gone:
 *   resolved at once, as for any unknown connection.
 * - Data channels are joined only while this node has local interest; a
 *   message carries its origin node so a node skips its own.
 */
export class RedisBroker extends Broker {
  private readonly logger = new Logger(RedisBroker.name);
  private readonly handlers = new Map<string, Registered>();
  private readonly listeners = new Map<ChannelKind, ChannelListener>();
  private readonly joined = new Map<string, JoinedChannel>();
  private readonly pending = new Map<number, PendingRequest>();
  private readonly head: Buffer;
  private readonly ownChannel: string;
  private nextRequestId = 1;
  private readonly counters;

  constructor(
    private readonly link: RedisLink,
    private readonly names: ClusterNames,
    private readonly nodeId: string,
    metrics: GatewayMetrics,
  ) {
    super();
    this.head = originHead(nodeId);
    this.ownChannel = names.node(nodeId);
    const out = (kind: string) => metrics.brokerMessages.labels('out', kind);
    const into = (kind: string) => metrics.brokerMessages.labels('in', kind);
    this.counters = {
      commandOut: out('command'), commandIn: into('command'), ackOut: out('ack'), ackIn: into('ack'),
      channelOut: { t: out('topic'), l: out('lattice'), u: out('user') },
      channelIn: { t: into('topic'), l: into('lattice'), u: into('user') },
      dropped: metrics.brokerMessagesDropped,
    };
    link.onMessage((channel, message) => this.onMessage(channel, message));
  }

  /** Subscribe this node's own channels (before the node serves anything) and probe a silent subscriber. */
  async start(probe = { idleMs: PROBE_IDLE_MS, timeoutMs: PROBE_TIMEOUT_MS }): Promise<void> {
    await this.link.subscribe(this.ownChannel);
    await this.link.subscribe(this.names.everyNode);
    this.link.startProbe(this.ownChannel, probe.idleMs, probe.timeoutMs);
  }

  handle<T>(kind: string, handler: CommandHandler<T>, codec?: DataCodec<T>): void {
    this.handlers.set(kind, { handler: handler as CommandHandler<unknown>, codec: codec as DataCodec<unknown> | undefined });
  }

  async toOwner<T>(kind: string, connectionId: string, data: T): Promise<void> {
    const owner = nodeOfConnectionId(connectionId);
    if (owner === null || owner === this.nodeId) return this.applyLocal(kind, connectionId, data);
    this.assertUp();
    const { id, done } = this.expectAcks();
    const receivers = await this.link.timed('publish', this.link.command.publish(this.names.node(owner), this.envelope(kind, connectionId, data, id)));
    this.counters.commandOut.inc();
    if (receivers > 0) return this.awaitAcks(id, done, receivers, `node ${owner}`);
    this.cancel(id);
    // Nobody listens on the owner's channel. A liveness key still there means it is alive but cut off.
    if ((await this.link.command.exists(this.names.alive(owner))) === 1) {
      throw new ClusterUnavailableError('owner_unreachable', `node ${owner} owning the connection is not reachable; retry`);
    }
  }

  async toEveryNode<T>(kind: string, target: string, data: T): Promise<void> {
    this.assertUp();
    const { id, done } = this.expectAcks();
    const receivers = await this.link.timed('publish', this.link.command.publish(this.names.everyNode, this.envelope(kind, target, data, id)));
    this.counters.commandOut.inc();
    // This node is one of the receivers and skips its own message: it applies the command here instead.
    await this.applyLocal(kind, target, data);
    if (receivers > 1) return this.awaitAcks(id, done, receivers - 1, 'every node');
    this.cancel(id);
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
    const joined: JoinedChannel = { kind, name, subscribed: this.link.subscribe(channel), leaveTimer: null };
    this.joined.set(channel, joined);
    return joined.subscribed;
  }

  leave(kind: ChannelKind, name: string): void {
    const channel = this.names.channel(kind, name);
    const held = this.joined.get(channel);
    if (held === undefined || held.leaveTimer !== null) return;
    held.leaveTimer = setTimeout(() => {
      this.joined.delete(channel);
      this.link.unsubscribe(channel);
    }, LEAVE_DELAY_MS);
    held.leaveTimer.unref();
  }

  send(kind: ChannelKind, name: string, payload: Buffer): void {
    if (!this.link.isUp) return void this.counters.dropped.inc();
    const message = encodeChannelMessage(this.head, payload);
    this.link.command.publish(this.names.channel(kind, name), message).catch(() => this.counters.dropped.inc());
    this.counters.channelOut[kind].inc();
  }

  /** Stop timers (app shutdown). */
  stop(): void {
    for (const held of this.joined.values()) if (held.leaveTimer !== null) clearTimeout(held.leaveTimer);
    for (const request of this.pending.values()) if (request.timer !== null) clearTimeout(request.timer);
  }

  private applyLocal(kind: string, target: string, data: unknown): Promise<void> {
    const registered = this.handlers.get(kind);
    if (registered === undefined) throw new Error(`no handler for ${kind}`);
    return Promise.resolve(registered.handler(target, data));
  }

  private envelope(kind: string, target: string, data: unknown, id: number): string {
    const codec = this.handlers.get(kind)?.codec;
    const envelope: CommandEnvelope = { k: kind, t: target, d: codec === undefined ? data : codec.encode(data), f: this.nodeId, r: id };
    return JSON.stringify(envelope);
  }

  private assertUp(): void {
    if (!this.link.isUp) throw new ClusterUnavailableError('cluster_unavailable', 'Redis is not reachable from this node; retry');
  }

  /** Registers a request before it is published, so an early ack is counted, never lost. */
  private expectAcks(): { id: number; done: Promise<void> } {
    const id = this.nextRequestId++;
    let resolve!: () => void;
    const done = new Promise<void>((r) => (resolve = r));
    this.pending.set(id, { acked: 0, expected: null, resolve, timer: null });
    return { id, done };
  }

  /** Resolves once `receivers` acks came, or rejects with owner_unreachable after the timeout. */
  private async awaitAcks(id: number, done: Promise<void>, receivers: number, who: string): Promise<void> {
    const request = this.pending.get(id);
    if (request === undefined) return;
    request.expected = receivers;
    if (request.acked >= receivers) return this.settle(id);
    let timer!: NodeJS.Timeout;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new ClusterUnavailableError('owner_unreachable', `${who} did not acknowledge within ${OWNER_ACK_TIMEOUT_MS} ms; retry`));
      }, OWNER_ACK_TIMEOUT_MS);
    });
    request.timer = timer;
    await Promise.race([done, timeout]);
  }

  private cancel(id: number): void {
    this.pending.delete(id);
  }

  private settle(id: number): void {
    const request = this.pending.get(id);
    if (request === undefined) return;
    this.pending.delete(id);
    if (request.timer !== null) clearTimeout(request.timer);
    request.resolve();
  }

  private onMessage(channel: string, message: Buffer): void {
    if (channel === this.ownChannel || channel === this.names.everyNode) return this.onNodeMessage(message);
    const held = this.joined.get(channel);
    if (held === undefined) return;
    const decoded = decodeChannelMessage(message);
    if (decoded === null || decoded.origin === this.nodeId) return;
    this.counters.channelIn[held.kind].inc();
    this.listeners.get(held.kind)?.(held.name, decoded.payload);
  }

  private onNodeMessage(message: Buffer): void {
    const envelope = decodeNodeMessage(message.toString('utf8'));
    if (envelope === null) return;
    if (isAck(envelope)) return this.onAck(envelope);
    if (envelope.f === this.nodeId) return; // our own command to every node, applied locally already
    this.counters.commandIn.inc();
    void this.runRemote(envelope);
  }

  private onAck(ack: AckEnvelope): void {
    this.counters.ackIn.inc();
    const request = this.pending.get(ack.a);
    if (request === undefined) return;
    request.acked += 1;
    if (request.expected !== null && request.acked >= request.expected) this.settle(ack.a);
  }

  private async runRemote(envelope: CommandEnvelope): Promise<void> {
    const registered = this.handlers.get(envelope.k);
    try {
      if (registered === undefined) throw new Error(`no handler for ${envelope.k}`);
      const data = registered.codec === undefined ? envelope.d : registered.codec.decode(envelope.d);
      await registered.handler(envelope.t, data);
    } catch (err) {
      this.logger.warn({ msg: 'remote command failed', kind: envelope.k, from: envelope.f, error: (err as Error).message });
    }
    const ack: AckEnvelope = { a: envelope.r, f: this.nodeId };
    this.link.command.publish(this.names.node(envelope.f), JSON.stringify(ack)).catch(() => undefined);
    this.counters.ackOut.inc();
  }
}
