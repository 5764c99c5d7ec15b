import { RedisLink } from '../cluster/redis-link';
import { RedisShards } from '../cluster/redis-shards';
import { Connection } from '../connections/connection';
import { GatewayMetrics } from '../metrics/gateway-metrics';
import { messageFrameHead, positionedMessageFrameHead } from '../protocol/frames';
import { pathToWire } from '../protocol/identifiers';
import { encodeMessageFrame } from './message-frame';
import { replayStart } from './replay-start';
import { KeptHistory } from './topic-history';
import { NO_POSITION, TopicPosition } from '../protocol/topic-position';
import { LoggedMessage, STALE, TopicLog, TopicLogRead, decodeLoggedMessage } from './topic-log';
import { GapFill, OrderStep, TopicOrder } from './topic-order';
import { TopicSubscribers } from './topic-subscribers';
import { ClientPositions, ReplayPlan, TopicStream } from './topic-stream';

/** A topic's history could not be read for a replay (Redis down): the topic is lost. */
const UNREADABLE = 'unreadable';

/**
 * Cluster mode with resumable sessions on (SPEC §12.4, §13.1): a publish is
 * numbered in the topic's history in Redis ({@link TopicLog}, whose script
 * also publishes it to the other nodes); every node encodes each form at most
 * once and delivers in offset order ({@link TopicOrder}), fills a gap from
 * the history, and catches up on what it missed after a reconnection.
 */
export class RedisTopicStream extends TopicStream {
  readonly isNumbered = true;
  private readonly order = new TopicOrder();
  /** The history's script publishes to the other nodes, so it is counted here (the broker never sees it). */
  private readonly topicsOut;

  constructor(
    private readonly log: TopicLog,
    private readonly subscribers: TopicSubscribers,
    shards: RedisShards,
    metrics: GatewayMetrics,
  ) {
    super();
    this.topicsOut = metrics.brokerMessages.labels('out', 'topic');
    // SPEC §13.1: a rollback is noticed before the link counts as up, so before any publish of this node
    // (or one it hears) starts a new epoch over the rolled-back history.
    for (const link of shards.data) {
      link.onSettle(() => this.noticeRollbacks(shards, link).catch(() => undefined));
      // Messages published while this node's link was down are in the history: fetch them.
      link.onUp(() => this.catchUp([...this.order.topics()].filter((topic) => shards.ofName(topic) === link)));
      // SPEC §13.5: a topic's slot moved to another primary, or its primary failed over: the same.
      link.onResubscribed((channels) => {
        const moved = new Set(channels);
        void this.catchUp([...this.order.topics()].filter((topic) => moved.has(this.log.channel(topic))));
      });
    }
  }

  /**
   * Append to the topic's history in Redis (which publishes to the other
   * nodes), then deliver here in order. With REDIS_WAIT_REPLICAS the answer
   * waits for the replicas (SPEC §13.1); the other nodes deliver meanwhile, so
   * this one does too.
   */
  async publish(topic: string, payload: Buffer): Promise<void> {
    const message = await this.log.append(topic, payload);
    this.topicsOut.inc();
    this.arrived(topic, message);
    await this.log.confirm(topic);
  }

  /** The history's form, or a plain frame (from a node without history). */
  received(topic: string, message: Buffer): void {
    const logged = decodeLoggedMessage(message);
    if (logged === null) this.subscribers.deliver(topic, message);
    else this.arrived(topic, logged);
  }

  /** Not known without asking Redis: read once the channel is joined ({@link joined}). */
  positionNow(): TopicPosition {
    return NO_POSITION;
  }

  /**
   * Where the topic stands, as this node's start for gap detection and as the
   * position at which a resumable `subscriber` subscribed (its replay starts
   * there when the client names none).
   */
  async joined(topic: string, subscriber: Connection | null): Promise<void> {
    if (subscriber === null && this.order.knows(topic)) return;
    const position = await this.log.position(topic).catch(() => null);
    if (position === null || !this.subscribers.has(topic)) return;
    this.order.startAt(topic, position);
    if (subscriber !== null) this.subscribers.positions.startsAt(subscriber, topic, position);
  }

  /**
   * Per subscribed topic, what Redis holds after the client's position (or
   * where the session subscribed): one script call per topic, all sent
   * together. Lost when that position names another epoch, when the stream no
   * longer holds every missed message (TOPIC_HISTORY_SIZE, or 0), or when
   * Redis cannot be read. The caller holds the connection's live frames
   * meanwhile (Connection.holdForReplay) and drops those the replay covered.
   */
  async replay(subscriber: Connection, from: ClientPositions): Promise<ReplayPlan> {
    const plan: ReplayPlan = { lostTopics: [], frames: [], upTo: new Map() };
    const topics = [...(this.subscribers.index.topicsOf(subscriber) ?? [])];
    const positions = this.subscribers.positions;
    const starts = topics.map((topic) => replayStart(from.get(topic), positions.subscribedAt(subscriber, topic)));
    const reads = await Promise.all(
      topics.map((topic, i) => this.log.read(topic, starts[i].offset).catch((): typeof UNREADABLE => UNREADABLE)),
    );
    topics.forEach((topic, i) => {
      const read = reads[i];
      // No history: nothing was published since it expired (TOPIC_HISTORY_TTL ≥ RESUME_WINDOW), unless
      // Redis was replaced since and may have rolled back to before it existed (SPEC §13.1).
      if (read === null) return void (this.log.mayHaveRolledBack(topic) && plan.lostTopics.push(pathToWire(topic)));
      // Unreadable, or a history Redis may have rolled back since (SPEC §13.1): what it lacks cannot be told.
      if (read === UNREADABLE || read === STALE) return void plan.lostTopics.push(pathToWire(topic));
      plan.upTo.set(topic, { offset: read.offset, epoch: read.epoch });
      const replay = replayOf(read, starts[i]);
      if (replay === null) return void plan.lostTopics.push(pathToWire(topic));
      const wire = pathToWire(topic);
      for (const message of replay)
        plan.frames.push(
          encodeMessageFrame(positionedMessageFrameHead(wire, message.offset, message.epoch), message.payload),
        );
    });
    return plan;
  }

  currentPosition(topic: string): Promise<TopicPosition> {
    return this.log.position(topic);
  }

  historyOf(topic: string): Promise<KeptHistory> {
    return this.log.kept(topic);
  }

  left(topic: string): void {
    this.order.forget(topic);
  }

  stop(): void {}

  /** A numbered message reached this node: delivered in offset order, a gap filled from the history first (SPEC §12.4). */
  private arrived(topic: string, message: LoggedMessage): void {
    if (!this.subscribers.has(topic)) return;
    this.follow(topic, this.order.arrive(topic, message));
  }

  private follow(topic: string, step: OrderStep): void {
    for (const message of step.ready) this.deliver(topic, message);
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
      await this.log.awaitInFlight(topic);
      if (this.order.isStillMissing(topic, fill)) {
        const read = await this.log.read(topic, fill.after, fill.before - 1);
        if (read !== null && read !== STALE && read.epoch === fill.epoch) messages = read.messages;
      }
    } catch {
      // Redis unreachable: what is missing is skipped (the client sees the jump); a reconnect catches up.
    }
    this.follow(topic, this.order.filled(topic, fill, messages));
  }

  /** After a Redis reconnect, before the link is up: a history behind what this node delivered in its epoch is reported. */
  private async noticeRollbacks(shards: RedisShards, link: RedisLink): Promise<void> {
    const topics = [...this.order.topics()].filter((topic) => shards.ofName(topic) === link);
    const positions = await Promise.all(topics.map((topic) => this.log.positionSeen(topic).catch(() => null)));
    topics.forEach((topic, i) => {
      const seen = positions[i];
      if (seen !== null && this.order.isAhead(topic, seen))
        this.log.rolledBack(topic, `topic ${topic}: redis holds offset ${seen.offset}, this node delivered more`);
    });
  }

  /**
   * After a Redis reconnect (or a resubscription elsewhere): per topic, what
   * the history got meanwhile is filled in. A history behind what this node
   * delivered in the same epoch is a rollback (SPEC §13.1): reported; its
   * next publish starts a new epoch (a stale history's always does), which
   * this node follows.
   */
  private async catchUp(topics: readonly string[]): Promise<void> {
    const positions = await Promise.all(topics.map((topic) => this.log.positionSeen(topic).catch(() => null)));
    topics.forEach((topic, i) => {
      const seen = positions[i];
      if (seen === null) return;
      if (this.order.isAhead(topic, seen))
        this.log.rolledBack(topic, `topic ${topic}: redis holds offset ${seen.offset}, this node delivered more`);
      if (!seen.isStale) this.follow(topic, this.order.catchUp(topic, seen));
    });
  }

  /** Each form encoded at most once, and only when some subscriber here takes it. */
  private deliver(topic: string, message: LoggedMessage): void {
    const count = this.subscribers.countOf(topic);
    if (count === 0) return;
    const wire = pathToWire(topic);
    const resumable = this.subscribers.positions.subscriberCount(topic);
    const frame = resumable < count ? encodeMessageFrame(messageFrameHead(wire), message.payload) : null;
    const positioned =
      resumable > 0
        ? {
            frame: encodeMessageFrame(positionedMessageFrameHead(wire, message.offset, message.epoch), message.payload),
            topic,
            offset: message.offset,
            epoch: message.epoch,
          }
        : null;
    this.subscribers.deliver(topic, frame, positioned);
  }
}

/**
 * The messages after `from` that `read` holds, or null (lost) when some are
 * missing, when `from` names another epoch, or when it is ahead of the
 * history (Redis rolled back, SPEC §13.1: never "nothing missed").
 */
function replayOf(read: TopicLogRead, from: TopicPosition): LoggedMessage[] | null {
  if (from.epoch !== null && from.epoch !== read.epoch) return null;
  const missed = read.offset - from.offset;
  if (missed < 0) return null;
  if (missed === 0) return [];
  return read.messages.length < missed ? null : read.messages;
}
