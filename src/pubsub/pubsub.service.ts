import { Injectable, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { Broker } from '../cluster/broker';
import { GatewayConfig } from '../config/gateway-config';
import { Connection } from '../connections/connection';
import { ConnectionRegistry } from '../connections/connection-registry';
import { GatewayMetrics } from '../metrics/gateway-metrics';
import { messageFrameHead, positionedMessageFrameHead } from '../protocol/frames';
import { pathToWire } from '../protocol/identifiers';
import { isResumeOffered } from '../resume/resume-settings';
import { ResumablePositions } from './resumable-positions';
import { HistoryPosition, TopicHistory } from './topic-history';
import { TopicIndex } from './topic-index';

const FRAME_TAIL = Buffer.from(']');
const RESOLVED = Promise.resolve();

/** SPEC §12.3: what a resumed session gets: the topics it lost, then the frames it missed. */
export interface ReplayPlan {
  /** Wire form (`a.b`). */
  readonly lostTopics: string[];
  readonly frames: Buffer[];
}

/**
 * Topic subscriptions and publish fan-out (seed §4.2, SPEC §9). A publish is
 * encoded ONCE into a Buffer and that Buffer goes to every subscriber; with
 * topic history (SPEC §12.4) resumable subscribers get a second form, with the
 * topic position, also encoded once.
 */
@Injectable()
export class PubSubService implements OnModuleInit, OnModuleDestroy {
  private readonly index = new TopicIndex<Connection>();
  private readonly messagesSent;
  /** SPEC §12.4, single node with resumable sessions on; null otherwise. */
  private readonly history: TopicHistory | null = null;
  private readonly positions = new ResumablePositions();
  private sweepTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly broker: Broker,
    private readonly registry: ConnectionRegistry,
    private readonly metrics: GatewayMetrics,
    config: GatewayConfig,
  ) {
    this.messagesSent = metrics.framesSent.labels('message');
    if (isResumeOffered(config)) {
      const { historySize, historyTtlMs } = config.resume;
      const history = (this.history = new TopicHistory(historySize, historyTtlMs));
      this.sweepTimer = setInterval(() => {
        history.sweep(Date.now());
        metrics.topicHistoryMessages.set(history.messageCount);
      }, Math.min(Math.max(historyTtlMs / 4, 25), 30_000));
      this.sweepTimer.unref();
    }
  }

  onModuleDestroy(): void {
    if (this.sweepTimer !== null) clearInterval(this.sweepTimer);
  }

  onModuleInit(): void {
    this.broker.handle<string>('topic_subscribe', (connectionId, topic) => this.applySubscribe(connectionId, topic));
    this.broker.handle<string>('topic_unsubscribe', (connectionId, topic) => this.applyUnsubscribe(connectionId, topic));
    // Frames published through other nodes (cluster mode) take the same loop.
    this.broker.listen('t', (topic, frame) => this.deliverLocal(topic, frame));
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
  deliverLocal(topic: string, frame: Buffer, positioned: Buffer | null = null): void {
    const subscribers = this.index.subscribersOf(topic);
    if (subscribers === undefined) return;
    if (positioned === null) for (const connection of subscribers) connection.sendOrKeep(frame);
    else for (const connection of subscribers) connection.sendOrKeep(connection.isResumable ? positioned : frame);
    this.messagesSent.inc(subscribers.size);
  }

  /**
   * SPEC §12.3: for a resumed session, per subscribed topic, the frames
   * published after the client's position (or after the session subscribed),
   * or the topic as lost. Synchronous, so nothing is published between the
   * replay and live traffic (no duplicate, no gap).
   */
  replayPlan(connection: Connection, clientPositions: ReadonlyMap<string, { readonly offset: number; readonly epoch: string }>): ReplayPlan {
    const plan: ReplayPlan = { lostTopics: [], frames: [] };
    const topics = this.index.topicsOf(connection);
    if (topics === undefined || this.history === null) return plan;
    for (const topic of topics) {
      const from = clientPositions.get(topic) ?? this.positions.subscribedAt(connection, topic);
      const replay = this.history.replayAfter(topic, from);
      if (replay.isLost) plan.lostTopics.push(pathToWire(topic));
      else for (const frame of replay.frames) plan.frames.push(frame);
    }
    return plan;
  }

  /**
   * SPEC §12.4: the positioned frame of a publish, kept in the topic's
   * history; null when no resumable session is subscribed to the topic (no
   * one could ever ask for it back, so legacy-only topics cost nothing).
   */
  private keepInHistory(topic: string, wire: string, payload: Buffer): Buffer | null {
    if (this.history === null || !this.positions.hasSubscribers(topic)) return null;
    const { offset, epoch } = this.history.next(topic, Date.now());
    const positioned = encodeMessageFrame(positionedMessageFrameHead(wire, offset, epoch), payload);
    this.history.keep(topic, positioned);
    this.metrics.topicHistoryMessages.set(this.history.messageCount);
    return positioned;
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
      if (this.index.add(topic, connection) && this.history !== null) this.positions.subscribed(connection, topic, at);
    }
    this.metrics.topics.set(this.index.topicCount);
    await Promise.all([...positions.keys()].map((topic) => this.broker.join('t', topic)));
  }

  private applySubscribe(connectionId: string, topic: string): Promise<void> | undefined {
    const connection = this.registry.get(connectionId);
    if (connection === undefined || connection.state === 'closed') return;
    const isNew = this.index.add(topic, connection);
    if (isNew && connection.isResumable && this.history !== null) this.positions.subscribed(connection, topic, this.history.position(topic));
    this.metrics.topics.set(this.index.topicCount);
    const joined = this.broker.join('t', topic);
    // Cluster mode: the session record says so before the 204 (SPEC §12.5).
    const recorded = isNew ? this.registry.subscriptionsChanged(connection) : undefined;
    return recorded === undefined ? joined : Promise.all([joined, recorded]).then(() => undefined);
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
    if (this.index.subscribersOf(topic) === undefined) this.broker.leave('t', topic);
  }
}

/** `head` + payload + `]` in one Buffer. */
function encodeMessageFrame(head: string, payload: Buffer): Buffer {
  const headBytes = Buffer.from(head);
  return Buffer.concat([headBytes, payload, FRAME_TAIL], headBytes.length + payload.length + 1);
}
