import { Broker } from '../cluster/broker';
import { Connection, PositionedFrame } from '../connections/connection';
import { GatewayMetrics } from '../metrics/gateway-metrics';
import { messageFrameHead, positionedMessageFrameHead } from '../protocol/frames';
import { pathToWire } from '../protocol/identifiers';
import { encodeMessageFrame } from './message-frame';
import { replayStart } from './replay-start';
import { HistoryLimits, KeptHistory, TopicHistory } from './topic-history';
import { NO_POSITION, TopicPosition } from '../protocol/topic-position';
import { TopicSubscribers } from './topic-subscribers';
import { ClientPositions, ReplayPlan, TopicStream } from './topic-stream';

const RESOLVED = Promise.resolve();
const NOTHING_SHARED = Promise.resolve(NO_POSITION);

/**
 * One node with resumable sessions on (SPEC §12.4): publishes to topics that
 * a resumable session follows are numbered and kept in memory
 * ({@link TopicHistory}), bounded by count, age and bytes; a resume replays
 * from there at once.
 */
export class MemoryTopicStream extends TopicStream {
  readonly isNumbered = true;
  private readonly history: TopicHistory;
  private readonly sweepTimer: NodeJS.Timeout;

  constructor(
    private readonly broker: Broker,
    private readonly subscribers: TopicSubscribers,
    private readonly metrics: GatewayMetrics,
    limits: HistoryLimits,
  ) {
    super();
    const history = (this.history = new TopicHistory(limits));
    const sweepEveryMs = Math.min(Math.max(limits.ttlMs / 4, 25), 30_000);
    this.sweepTimer = setInterval(() => {
      history.sweep(Date.now());
      metrics.topicHistoryMessages.set(history.messageCount);
    }, sweepEveryMs);
    this.sweepTimer.unref();
  }

  publish(topic: string, payload: Buffer): Promise<void> {
    const wire = pathToWire(topic);
    const frame = encodeMessageFrame(messageFrameHead(wire), payload);
    this.broker.send('t', topic, frame);
    this.subscribers.deliver(topic, frame, this.keep(topic, wire, payload));
    return RESOLVED;
  }

  received(topic: string, message: Buffer): void {
    this.subscribers.deliver(topic, message);
  }

  positionNow(topic: string): TopicPosition {
    return this.history.position(topic);
  }

  joined(): Promise<void> {
    return RESOLVED;
  }

  /**
   * SPEC §12.3: per subscribed topic, the frames published after the client's
   * position (or after the session subscribed), never before its latest
   * subscription ({@link replayStart}), or the topic as lost. Computed at
   * once, so nothing is published between the replay and live traffic (no
   * duplicate, no gap).
   */
  replay(subscriber: Connection, from: ClientPositions): Promise<ReplayPlan> {
    const plan: ReplayPlan = { lostTopics: [], frames: [], upTo: new Map() };
    const positions = this.subscribers.positions;
    for (const topic of this.subscribers.index.topicsOf(subscriber) ?? []) {
      const start = replayStart(from.get(topic), positions.subscribedAt(subscriber, topic));
      const replay = this.history.replayAfter(topic, start);
      if (replay.isLost) plan.lostTopics.push(pathToWire(topic));
      else for (const frame of replay.frames) plan.frames.push(frame);
      const now = this.history.position(topic);
      if (now.epoch !== null) plan.upTo.set(topic, { offset: now.offset, epoch: now.epoch });
    }
    return Promise.resolve(plan);
  }

  currentPosition(): Promise<TopicPosition> {
    return NOTHING_SHARED;
  }

  historyOf(topic: string): KeptHistory {
    return this.history.kept(topic);
  }

  left(): void {}

  stop(): void {
    clearInterval(this.sweepTimer);
  }

  /**
   * SPEC §12.4: the positioned frame of a publish, kept in the topic's
   * history; null when no resumable session is subscribed to the topic (no
   * one could ever ask for it back, so legacy-only topics cost nothing).
   */
  private keep(topic: string, wire: string, payload: Buffer): PositionedFrame | null {
    if (!this.subscribers.positions.hasSubscribers(topic)) return null;
    const { offset, epoch } = this.history.next(topic, Date.now());
    // Its own memory, not a slice of Node's shared pool: a kept 1 KiB message holds ~1 KiB, not an 8 KiB slab (SPEC §12.4).
    const frame = encodeMessageFrame(positionedMessageFrameHead(wire, offset, epoch), payload, true);
    this.history.keep(topic, frame, payload.length);
    this.metrics.topicHistoryMessages.set(this.history.messageCount);
    return { frame, topic, offset, epoch };
  }
}
