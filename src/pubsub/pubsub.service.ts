import { Injectable, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { Broker } from '../cluster/broker';
import { ClusterContext } from '../cluster/cluster-context';
import { GatewayConfig } from '../config/gateway-config';
import { Connection, PositionedFrame, ReplayedPosition } from '../connections/connection';
import { ConnectionRegistry } from '../connections/connection-registry';
import { GatewayMetrics } from '../metrics/gateway-metrics';
import { messageFrameHead, positionedMessageFrameHead } from '../protocol/frames';
import { pathToWire } from '../protocol/identifiers';
import { isResumeOffered } from '../resume/resume-settings';
import { encodeMessageFrame } from './message-frame';
import { replayStart } from './replay-start';
import { ResumablePositions } from './resumable-positions';
import { HistoryPosition, KeptHistory, TopicHistory } from './topic-history';
import { TopicIndex } from './topic-index';
import { LoggedMessage, STALE, TopicLog, TopicLogRead, decodeLoggedMessage } from './topic-log';
import { GapFill, OrderStep, TopicOrder } from './topic-order';

const RESOLVED = Promise.resolve();

/** SPEC §12.3: what a resumed session gets: the topics it lost, then the frames it missed. */
export interface ReplayPlan {
  /** Wire form (`a.b`). */
  readonly lostTopics: string[];
  readonly frames: Buffer[];
  /** Per topic (path form), where the replay reached: live frames up to there are not sent again. */
  readonly upTo: Map<string, ReplayedPosition>;
}

/** A topic's history could not be read for a replay (Redis down): the topic is lost. */
const UNREADABLE = 'unreadable';

/**
 * Topic subscriptions and publish fan-out (seed §4.2, SPEC §9). A publish is
 * encoded ONCE into a Buffer and that Buffer goes to every subscriber; with
 * topic history (SPEC §12.4) resumable subscribers get a second form, with the
 * topic position, also encoded once. History lives in memory on one node
 * ({@link TopicHistory}) and in Redis in cluster mode ({@link TopicLog}: the
 * publish is numbered there, every node then encodes each form at most once
 * and delivers in offset order, {@link TopicOrder}). With RESUME_WINDOW=0
 * neither exists and publish takes the plain path.
 */
@Injectable()
export class PubSubService implements OnModuleInit, OnModuleDestroy {
  private readonly index = new TopicIndex<Connection>();
  private readonly messagesSent;
  /** Cluster mode: the history's script publishes to the other nodes, so it is counted here (the broker never sees it). */
  private readonly topicsOut;
  /** SPEC §12.4: resumable sessions are on, so publishes are numbered and kept. */
  private readonly isHistoryOn: boolean;
  /** SPEC §12.4, single node with resumable sessions on; null otherwise. */
  private readonly history: TopicHistory | null = null;
  /** SPEC §12.4, cluster mode with resumable sessions on: the history in Redis, and the order this node delivers in. */
  private readonly log: TopicLog | null = null;
  private readonly order = new TopicOrder();
  private readonly positions = new ResumablePositions();
  private sweepTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly broker: Broker,
    private readonly registry: ConnectionRegistry,
    private readonly metrics: GatewayMetrics,
    config: GatewayConfig,
    cluster: ClusterContext,
  ) {
    this.messagesSent = metrics.framesSent.labels('message');
    this.topicsOut = metrics.brokerMessages.labels('out', 'topic');
    this.isHistoryOn = isResumeOffered(config);
    if (this.isHistoryOn && cluster.link !== null) {
      const { historySize, historyTtlMs, topicHistoryMaxBytes } = config.resume;
      this.log = new TopicLog(
        cluster.link,
        cluster.names,
        cluster.nodeId,
        historySize,
        historyTtlMs,
        topicHistoryMaxBytes,
      );
      // Messages published while this node's link was down are in the history: fetch them.
      cluster.link.onUp(() => this.catchUp());
    } else if (this.isHistoryOn) {
      const { historySize, historyTtlMs, topicHistoryMaxBytes, historyMemoryMaxBytes } = config.resume;
      const limits = {
        size: historySize,
        ttlMs: historyTtlMs,
        topicMaxBytes: topicHistoryMaxBytes,
        memoryMaxBytes: historyMemoryMaxBytes,
      };
      const history = (this.history = new TopicHistory(limits));
      this.sweepTimer = setInterval(
        () => {
          history.sweep(Date.now());
          metrics.topicHistoryMessages.set(history.messageCount);
        },
        Math.min(Math.max(historyTtlMs / 4, 25), 30_000),
      );
      this.sweepTimer.unref();
    }
  }

  onModuleDestroy(): void {
    if (this.sweepTimer !== null) clearInterval(this.sweepTimer);
  }

  onModuleInit(): void {
    this.broker.handle<string>('topic_subscribe', (connectionId, topic) => this.applySubscribe(connectionId, topic));
    this.broker.handle<string>('topic_unsubscribe', (connectionId, topic) =>
      this.applyUnsubscribe(connectionId, topic),
    );
    // Frames published through other nodes (cluster mode) take the same loop.
    if (this.log === null) this.broker.listen('t', (topic, frame) => this.deliverLocal(topic, frame));
    else this.broker.listen('t', (topic, message) => this.onChannelMessage(topic, message));
    this.registry.onRemove((connection) => {
      for (const topic of this.index.removeSubscriber(connection)) this.leaveIfUnused(topic);
      if (connection.isResumable) this.positions.forgetSubscriber(connection);
      this.metrics.topics.set(this.index.topicCount);
    });
  }

  /** Endpoint 1; resolves once the owner node applied it and listens to the topic (SPEC §11). */
  subscribe(connectionId: string, topic: string): Promise<void> {
    return this.broker.toOwner('topic_subscribe', connectionId, topic);
  }

  unsubscribe(connectionId: string, topic: string): Promise<void> {
    return this.broker.toOwner('topic_unsubscribe', connectionId, topic);
  }

  /**
   * Publish `payload` (raw, already validated JSON bytes) to `topic`: encoded
   * once, the same bytes sent to the other nodes that have subscribers (none
   * on a single node), and delivered here.
   */
  publish(topic: string, payload: Buffer): Promise<void> {
    if (this.log !== null) return this.publishLogged(topic, payload);
    const wire = pathToWire(topic);
    const frame = encodeMessageFrame(messageFrameHead(wire), payload);
    // Other nodes first: their fan-out then runs while this node does its own.
    this.broker.send('t', topic, frame);
    this.deliverLocal(topic, frame, this.keepInHistory(topic, wire, payload));
    return RESOLVED;
  }

  /**
   * The only fan-out loop: one Buffer to every local subscriber (the
   * positioned one to resumable subscribers, when there is one); pending ones
   * keep it for after hello.
   */
  deliverLocal(topic: string, frame: Buffer | null, positioned: PositionedFrame | null = null): void {
    const subscribers = this.index.subscribersOf(topic);
    if (subscribers === undefined) return;
    if (positioned === null) {
      for (const connection of subscribers) connection.sendOrKeep(frame!);
    } else {
      // `frame` is null only when every subscriber here is resumable.
      for (const connection of subscribers) {
        if (connection.isResumable) connection.sendPositioned(positioned);
        else connection.sendOrKeep(frame!);
      }
    }
    this.messagesSent.inc(subscribers.size);
  }

  /**
   * SPEC §12.3, the replay of a resumed session (see {@link replayPlan}). On
   * one node it is computed at once; in cluster mode it is read from Redis,
   * one script call per subscribed topic, all sent together. The caller holds
   * the connection's live frames meanwhile (Connection.holdForReplay) and
   * drops those the replay covered (`upTo`).
   */
  replay(
    connection: Connection,
    clientPositions: ReadonlyMap<string, { readonly offset: number; readonly epoch: string }>,
  ): Promise<ReplayPlan> {
    if (this.log === null) return Promise.resolve(this.replayPlan(connection, clientPositions));
    return this.replayFromLog(this.log, connection, clientPositions);
  }

  /**
   * SPEC §12.3: for a resumed session, per subscribed topic, the frames
   * published after the client's position (or after the session subscribed),
   * never before its latest subscription ({@link replayStart}), or the topic
   * as lost. Synchronous, so nothing is published between the replay and
   * live traffic (no duplicate, no gap).
   */
  replayPlan(
    connection: Connection,
    clientPositions: ReadonlyMap<string, { readonly offset: number; readonly epoch: string }>,
  ): ReplayPlan {
    const plan: ReplayPlan = { lostTopics: [], frames: [], upTo: new Map() };
    const topics = this.index.topicsOf(connection);
    if (topics === undefined || this.history === null) return plan;
    for (const topic of topics) {
      const from = replayStart(clientPositions.get(topic), this.positions.subscribedAt(connection, topic));
      const replay = this.history.replayAfter(topic, from);
      if (replay.isLost) plan.lostTopics.push(pathToWire(topic));
      else for (const frame of replay.frames) plan.frames.push(frame);
      const now = this.history.position(topic);
      if (now.epoch !== null) plan.upTo.set(topic, { offset: now.offset, epoch: now.epoch });
    }
    return plan;
  }

  /**
   * Cluster mode: per subscribed topic, what Redis holds after the client's
   * position (or where the session subscribed). Lost when that position names
   * another epoch, when the stream no longer holds every missed message
   * (TOPIC_HISTORY_SIZE, or 0), or when Redis cannot be read.
   */
  private async replayFromLog(
    log: TopicLog,
    connection: Connection,
    clientPositions: ReadonlyMap<string, { readonly offset: number; readonly epoch: string }>,
  ): Promise<ReplayPlan> {
    const plan: ReplayPlan = { lostTopics: [], frames: [], upTo: new Map() };
    const topics = [...(this.index.topicsOf(connection) ?? [])];
    const froms = topics.map((topic) =>
      replayStart(clientPositions.get(topic), this.positions.subscribedAt(connection, topic)),
    );
    const reads = await Promise.all(
      topics.map((topic, i) => log.read(topic, froms[i].offset).catch((): typeof UNREADABLE => UNREADABLE)),
    );
    topics.forEach((topic, i) => {
      const read = reads[i];
      // No history: nothing was published since it expired (TOPIC_HISTORY_TTL ≥ RESUME_WINDOW), unless
      // Redis was replaced since and may have rolled back to before it existed (SPEC §13.1).
      if (read === null) return void (log.mayHaveRolledBack() && plan.lostTopics.push(pathToWire(topic)));
      // Unreadable, or a history Redis may have rolled back since (SPEC §13.1): what it lacks cannot be told.
      if (read === UNREADABLE || read === STALE) return void plan.lostTopics.push(pathToWire(topic));
      plan.upTo.set(topic, { offset: read.offset, epoch: read.epoch });
      const replay = replayOf(read, froms[i]);
      if (replay === null) return void plan.lostTopics.push(pathToWire(topic));
      const wire = pathToWire(topic);
      for (const message of replay)
        plan.frames.push(
          encodeMessageFrame(positionedMessageFrameHead(wire, message.offset, message.epoch), message.payload),
        );
    });
    return plan;
  }

  /**
   * Cluster mode: append to the topic's history in Redis (which publishes to
   * the other nodes), then deliver here in order. With REDIS_WAIT_REPLICAS
   * the answer waits for the replicas (SPEC §13.1); the other nodes deliver
   * meanwhile, so this one does too.
   */
  private async publishLogged(topic: string, payload: Buffer): Promise<void> {
    const message = await this.log!.append(topic, payload);
    this.topicsOut.inc();
    this.arrived(topic, message);
    await this.log!.confirm();
  }

  /** A topic channel message from another node: the history's form, or a plain frame (a node without history). */
  private onChannelMessage(topic: string, message: Buffer): void {
    const logged = decodeLoggedMessage(message);
    if (logged === null) this.deliverLocal(topic, message);
    else this.arrived(topic, logged);
  }

  /** A numbered message reached this node: delivered in offset order, a gap filled from the history first (SPEC §12.4). */
  private arrived(topic: string, message: LoggedMessage): void {
    if (this.index.subscribersOf(topic) === undefined) return;
    this.follow(topic, this.order.arrive(topic, message));
  }

  private follow(topic: string, step: OrderStep): void {
    for (const message of step.ready) this.deliverLogged(topic, message);
    if (step.fill !== null) void this.fillGap(topic, step.fill);
  }

  /**
   * First let what is on its way arrive (a message published through another
   * node often comes after this node's own later one), then read from the
   * stream what is still missing; the rest is skipped.
   */
  private async fillGap(topic: string, fill: GapFill): Promise<void> {
    let messages: LoggedMessage[] = [];
    try {
      await this.log!.awaitInFlight();
      if (this.order.isStillMissing(topic, fill)) {
        const read = await this.log!.read(topic, fill.after, fill.before - 1);
        if (read !== null && read !== STALE && read.epoch === fill.epoch) messages = read.messages;
      }
    } catch {
      // Redis unreachable: what is missing is skipped (the client sees the jump); a reconnect catches up.
    }
    this.follow(topic, this.order.filled(topic, fill, messages));
  }

  /**
   * After a Redis reconnect: per followed topic, what the history got
   * meanwhile is filled in. A history behind what this node delivered in the
   * same epoch is a rollback (SPEC §13.1): reported; its next publish starts
   * a new epoch (a stale history's always does), which this node follows.
   */
  private async catchUp(): Promise<void> {
    const log = this.log!;
    const topics = [...this.order.topics()];
    const positions = await Promise.all(topics.map((topic) => log.positionSeen(topic).catch(() => null)));
    topics.forEach((topic, i) => {
      const seen = positions[i];
      if (seen === null) return;
      if (this.order.isAhead(topic, seen))
        log.rolledBack(`topic ${topic}: redis holds offset ${seen.offset}, this node delivered more`);
      if (!seen.isStale) this.follow(topic, this.order.catchUp(topic, seen));
    });
  }

  /** Each form encoded at most once, and only when some subscriber here takes it. */
  private deliverLogged(topic: string, message: LoggedMessage): void {
    const subscribers = this.index.subscribersOf(topic);
    if (subscribers === undefined) return;
    const wire = pathToWire(topic);
    const resumable = this.positions.subscriberCount(topic);
    const frame = resumable < subscribers.size ? encodeMessageFrame(messageFrameHead(wire), message.payload) : null;
    const positioned =
      resumable > 0
        ? {
            frame: encodeMessageFrame(positionedMessageFrameHead(wire, message.offset, message.epoch), message.payload),
            topic,
            offset: message.offset,
            epoch: message.epoch,
          }
        : null;
    this.deliverLocal(topic, frame, positioned);
  }

  /**
   * SPEC §12.4: the positioned frame of a publish, kept in the topic's
   * history; null when no resumable session is subscribed to the topic (no
   * one could ever ask for it back, so legacy-only topics cost nothing).
   */
  private keepInHistory(topic: string, wire: string, payload: Buffer): PositionedFrame | null {
    if (this.history === null || !this.positions.hasSubscribers(topic)) return null;
    const { offset, epoch } = this.history.next(topic, Date.now());
    // Its own memory, not a slice of Node's shared pool: a kept 1 KiB message holds ~1 KiB, not an 8 KiB slab (SPEC §12.4).
    const frame = encodeMessageFrame(positionedMessageFrameHead(wire, offset, epoch), payload, true);
    this.history.keep(topic, frame, payload.length);
    this.metrics.topicHistoryMessages.set(this.history.messageCount);
    return { frame, topic, offset, epoch };
  }

  /**
   * SPEC §12.3 in cluster mode: where a topic stands now, the position at
   * which a session subscribed through its record (held by no node) starts;
   * the history's start when Redis holds none for it (one node: no records).
   */
  async currentPosition(topic: string): Promise<readonly [number, string | null]> {
    if (this.log === null) return [0, null];
    const at = await this.log.position(topic);
    return [at.offset, at.epoch];
  }

  /** SPEC §15.2: the subscribers of a topic on this node (pending and detached ones included). */
  subscribersOf(topic: string): ReadonlySet<Connection> | undefined {
    return this.index.subscribersOf(topic);
  }

  /** SPEC §15.2: the topics of a connection (path form). */
  topicsOf(connection: Connection): ReadonlySet<string> {
    return this.index.topicsOf(connection) ?? NO_TOPICS;
  }

  /** SPEC §15.2 `/v1/info`: topics with subscribers on this node (a kept count). */
  get topicCount(): number {
    return this.index.topicCount;
  }

  /** SPEC §15.2: where a topic's history stands and how many messages it keeps; null when there is none (RESUME_WINDOW=0). */
  historyOf(topic: string): Promise<KeptHistory> | KeptHistory | null {
    return this.history?.kept(topic) ?? this.log?.kept(topic) ?? null;
  }

  /**
   * SPEC §12.5 (SESSIONS): the topics of a resumable session with the
   * position at which it subscribed to each, as its session record keeps them.
   */
  topicPositionsOf(connection: Connection): Map<string, readonly [number, string | null]> {
    const out = new Map<string, readonly [number, string | null]>();
    for (const topic of this.index.topicsOf(connection) ?? []) {
      const at = this.positions.subscribedAt(connection, topic);
      out.set(topic, [at.offset, at.epoch]);
    }
    return out;
  }

  /**
   * SPEC §12.5 (SESSIONS): a session taken over from another node gets its
   * topic subscriptions back, with the positions at which it subscribed;
   * resolves once this node listens to every one of the topics.
   */
  async restoreSubscriptions(connection: Connection, positions: ReadonlyMap<string, HistoryPosition>): Promise<void> {
    for (const [topic, at] of positions) {
      // At once: the fan-out loop counts resumable subscribers as the index holds them.
      if (this.index.add(topic, connection) && this.isHistoryOn) this.positions.subscribed(connection, topic, at);
    }
    this.metrics.topics.set(this.index.topicCount);
    await Promise.all(
      [...positions.keys()].map((topic) => {
        const joined = this.broker.join('t', topic);
        // A topic new to this node: where it stands, as the start for gap detection.
        return this.log === null || this.order.knows(topic)
          ? joined
          : joined.then(() => this.readPosition(this.log!, topic, null));
      }),
    );
  }

  private applySubscribe(connectionId: string, topic: string): Promise<void> | undefined {
    const connection = this.registry.get(connectionId);
    if (connection === undefined || connection.state === 'closed') return;
    const isNew = this.index.add(topic, connection);
    const isNewResumable = isNew && connection.isResumable && this.isHistoryOn;
    if (isNewResumable) this.positions.subscribed(connection, topic, this.history?.position(topic) ?? NO_HISTORY);
    this.metrics.topics.set(this.index.topicCount);
    const joined = this.broker.join('t', topic);
    const positioned =
      this.log === null || (!isNewResumable && this.order.knows(topic))
        ? joined
        : joined.then(() => this.readPosition(this.log!, topic, isNewResumable ? connection : null));
    // Cluster mode: the session record has it, with its subscribe position, before the 204 (SPEC §12.5).
    return isNewResumable && this.registry.isRecording
      ? positioned.then(() => this.registry.subscriptionsChanged(connection))
      : positioned;
  }

  /**
   * Cluster mode, once the channel is joined: where the topic stands, as this
   * node's start for gap detection and as the position at which a resumable
   * session subscribed (its replay starts there when the client names none).
   */
  private async readPosition(log: TopicLog, topic: string, subscriber: Connection | null): Promise<void> {
    const position = await log.position(topic).catch(() => null);
    if (position === null || this.index.subscribersOf(topic) === undefined) return;
    this.order.startAt(topic, position);
    if (subscriber !== null) this.positions.startsAt(subscriber, topic, position);
  }

  private applyUnsubscribe(connectionId: string, topic: string): Promise<void> | undefined {
    const connection = this.registry.get(connectionId);
    if (connection === undefined || !this.index.remove(topic, connection)) return;
    if (connection.isResumable) this.positions.unsubscribed(connection, topic);
    this.leaveIfUnused(topic);
    this.metrics.topics.set(this.index.topicCount);
    return this.registry.subscriptionsChanged(connection);
  }

  private leaveIfUnused(topic: string): void {
    if (this.index.subscribersOf(topic) !== undefined) return;
    this.broker.leave('t', topic);
    this.order.forget(topic);
  }
}

const NO_HISTORY: HistoryPosition = { offset: 0, epoch: null };
const NO_TOPICS: ReadonlySet<string> = new Set();

/**
 * The messages after `from` that `read` holds, or null (lost) when some are
 * missing, when `from` names another epoch, or when it is ahead of the
 * history (Redis rolled back, SPEC §13.1: never "nothing missed").
 */
function replayOf(read: TopicLogRead, from: HistoryPosition): LoggedMessage[] | null {
  if (from.epoch !== null && from.epoch !== read.epoch) return null;
  const missed = read.offset - from.offset;
  if (missed < 0) return null;
  if (missed === 0) return [];
  return read.messages.length < missed ? null : read.messages;
}
