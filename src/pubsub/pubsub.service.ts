import { Injectable, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import type { Applied } from '../cluster/whereabouts';
import { Broker } from '../cluster/broker';
import { Connection } from '../connections/connection';
import { ConnectionRegistry } from '../connections/connection-registry';
import { GatewayMetrics } from '../metrics/gateway-metrics';
import { SessionParts } from '../resume/session-parts';
import { RecordField, encodeRecordedPosition } from '../resume/session-record';
import { KeptHistory } from './topic-history';
import { TopicPosition } from '../protocol/topic-position';
import { TopicSubscribers } from './topic-subscribers';
import { ClientPositions, ReplayPlan, TopicStream } from './topic-stream';

/**
 * Topic subscriptions (seed §4.2, SPEC §9): who subscribes to what, on the
 * node that owns each connection. A publish goes to the {@link TopicStream}
 * of the mode the gateway runs in, which encodes it once and delivers it
 * through {@link TopicSubscribers.deliver}, the only fan-out loop.
 */
@Injectable()
export class PubSubService implements OnModuleInit, OnModuleDestroy {
  private readonly index;
  private readonly positions;

  constructor(
    private readonly broker: Broker,
    private readonly registry: ConnectionRegistry,
    private readonly metrics: GatewayMetrics,
    subscribers: TopicSubscribers,
    private readonly stream: TopicStream,
    private readonly sessionParts: SessionParts,
  ) {
    this.index = subscribers.index;
    this.positions = subscribers.positions;
  }

  onModuleDestroy(): void {
    this.stream.stop();
  }

  onModuleInit(): void {
    this.broker.handle<string>('topic_subscribe', (connectionId, topic) => this.applySubscribe(connectionId, topic));
    this.broker.handle<string>('topic_unsubscribe', (connectionId, topic) =>
      this.applyUnsubscribe(connectionId, topic),
    );
    this.sessionParts.register('topics', {
      read: (connection) => this.topicPositionsOf(connection),
      restore: (connection, positions) => this.restoreSubscriptions(connection, positions),
      orphanEdits: {
        // SPEC §12.3: the subscription starts where the topic stands now (the history's start when Redis
        // holds none for it): a replay gives what came after it only. One already there keeps where it began.
        topic_subscribe: async (topic) => ({
          op: 'add',
          field: RecordField.topic(topic as string),
          value: encodeRecordedPosition(await this.stream.currentPosition(topic as string)),
        }),
        topic_unsubscribe: (topic) => ({ op: 'del', field: RecordField.topic(topic as string) }),
      },
    });
    // Frames published through other nodes (cluster mode) take the same loop.
    this.broker.listen('t', (topic, message) => this.stream.received(topic, message));
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

  /** Publish `payload` (raw, already validated JSON bytes) to `topic`: encoded once, delivered everywhere. */
  publish(topic: string, payload: Buffer): Promise<void> {
    return this.stream.publish(topic, payload);
  }

  /**
   * SPEC §12.3, the replay of a resumed session: per subscribed topic, the
   * frames it missed or the topic as lost. The caller holds the connection's
   * live frames meanwhile (Connection.holdForReplay) and drops those the
   * replay covered (`upTo`).
   */
  replay(connection: Connection, clientPositions: ClientPositions): Promise<ReplayPlan> {
    return this.stream.replay(connection, clientPositions);
  }

  /** SPEC §15.2: the subscribers of a topic on this node (pending and detached ones included). */
  subscribersOf(topic: string): Iterable<Connection> {
    return this.index.subscribersOf(topic) ?? NO_CONNECTIONS;
  }

  /** SPEC §15.2: how many subscribers `topic` has on this node. */
  subscriberCount(topic: string): number {
    return this.index.subscriberCount(topic);
  }

  /** SPEC §15.2: the topics of a connection (path form). */
  topicsOf(connection: Connection): Iterable<string> {
    return this.index.topicsOf(connection) ?? NO_TOPICS;
  }

  /** SPEC §15.2 `/v1/info`: topics with subscribers on this node (a kept count). */
  get topicCount(): number {
    return this.index.topicCount;
  }

  /** SPEC §15.2: where a topic's history stands and how many messages it keeps; null when there is none (RESUME_WINDOW=0). */
  historyOf(topic: string): Promise<KeptHistory> | KeptHistory | null {
    return this.stream.historyOf(topic);
  }

  /**
   * SPEC §12.5 (SESSIONS): the topics of a resumable session with the
   * position at which it subscribed to each, as its session record keeps them.
   */
  private topicPositionsOf(connection: Connection): Map<string, TopicPosition> {
    const out = new Map<string, TopicPosition>();
    for (const topic of this.index.topicsOf(connection) ?? [])
      out.set(topic, this.positions.subscribedAt(connection, topic));
    return out;
  }

  /**
   * SPEC §12.5 (SESSIONS): a session taken over from another node gets its
   * topic subscriptions back, with the positions at which it subscribed;
   * resolves once this node listens to every one of the topics.
   */
  private async restoreSubscriptions(
    connection: Connection,
    positions: ReadonlyMap<string, TopicPosition>,
  ): Promise<void> {
    for (const [topic, at] of positions) {
      // At once: the fan-out loop counts resumable subscribers as the index holds them.
      if (this.index.add(topic, connection) && this.stream.isNumbered) this.positions.subscribed(connection, topic, at);
    }
    this.metrics.topics.set(this.index.topicCount);
    await Promise.all(
      [...positions.keys()].map((topic) => this.broker.join('t', topic).then(() => this.stream.joined(topic, null))),
    );
  }

  private applySubscribe(connectionId: string, topic: string): Applied | undefined {
    const connection = this.registry.get(connectionId);
    if (connection === undefined || connection.state === 'closed') return;
    const isNew = this.index.add(topic, connection);
    const isNewResumable = isNew && connection.isResumable && this.stream.isNumbered;
    if (isNewResumable) this.positions.subscribed(connection, topic, this.stream.positionNow(topic));
    this.metrics.topics.set(this.index.topicCount);
    const positioned = this.broker
      .join('t', topic)
      .then(() => this.stream.joined(topic, isNewResumable ? connection : null));
    // Cluster mode: the session record has it, with its subscribe position, before the 204 (SPEC §12.5).
    return isNewResumable && this.registry.isRecording
      ? positioned.then(() => this.registry.subscriptionsChanged(connection))
      : positioned;
  }

  private applyUnsubscribe(connectionId: string, topic: string): Applied | undefined {
    const connection = this.registry.get(connectionId);
    if (connection === undefined || !this.index.remove(topic, connection)) return;
    if (connection.isResumable) this.positions.unsubscribed(connection, topic);
    this.leaveIfUnused(topic);
    this.metrics.topics.set(this.index.topicCount);
    return this.registry.subscriptionsChanged(connection);
  }

  private leaveIfUnused(topic: string): void {
    if (this.index.hasSubscribers(topic)) return;
    this.broker.leave('t', topic);
    this.stream.left(topic);
  }
}

const NO_TOPICS: ReadonlySet<string> = new Set();
const NO_CONNECTIONS: readonly Connection[] = [];
