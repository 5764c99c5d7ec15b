import { Injectable, OnModuleInit } from '@nestjs/common';
import { Broker } from '../cluster/broker';
import { Connection } from '../connections/connection';
import { ConnectionRegistry } from '../connections/connection-registry';
import { GatewayMetrics } from '../metrics/gateway-metrics';
import { messageFrameHead } from '../protocol/frames';
import { pathToWire } from '../protocol/identifiers';
import { TopicIndex } from './topic-index';

const FRAME_TAIL = Buffer.from(']');
const RESOLVED = Promise.resolve();

/**
 * Topic subscriptions and publish fan-out (seed §4.2, SPEC §9). A publish is
 * encoded ONCE into a Buffer and that Buffer goes to every subscriber.
 */
@Injectable()
export class PubSubService implements OnModuleInit {
  private readonly index = new TopicIndex<Connection>();
  private readonly messagesSent;

  constructor(
    private readonly broker: Broker,
    private readonly registry: ConnectionRegistry,
    private readonly metrics: GatewayMetrics,
  ) {
    this.messagesSent = metrics.framesSent.labels('message');
  }

  onModuleInit(): void {
    this.broker.handle<string>('topic_subscribe', (connectionId, topic) => this.applySubscribe(connectionId, topic));
    this.broker.handle<string>('topic_unsubscribe', (connectionId, topic) => this.applyUnsubscribe(connectionId, topic));
    // Frames published through other nodes (cluster mode) take the same loop.
    this.broker.listen('t', (topic, frame) => this.deliverLocal(topic, frame));
    this.registry.onRemove((connection) => {
      for (const topic of this.index.removeSubscriber(connection)) this.leaveIfUnused(topic);
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
    const head = Buffer.from(messageFrameHead(pathToWire(topic)));
    const frame = Buffer.concat([head, payload, FRAME_TAIL], head.length + payload.length + 1);
    // Other nodes first: their fan-out then runs while this node does its own.
    this.broker.send('t', topic, frame);
    this.deliverLocal(topic, frame);
    return RESOLVED;
  }

  /** The only fan-out loop: one Buffer to every local subscriber; pending ones keep it for after hello. */
  deliverLocal(topic: string, frame: Buffer): void {
    const subscribers = this.index.subscribersOf(topic);
    if (subscribers === undefined) return;
    for (const connection of subscribers) connection.sendOrKeep(frame);
    this.messagesSent.inc(subscribers.size);
  }

  private applySubscribe(connectionId: string, topic: string): Promise<void> | undefined {
    const connection = this.registry.get(connectionId);
    if (connection === undefined || connection.state === 'closed') return;
    this.index.add(topic, connection);
    this.metrics.topics.set(this.index.topicCount);
    return this.broker.join('t', topic);
  }

  private applyUnsubscribe(connectionId: string, topic: string): void {
    const connection = this.registry.get(connectionId);
    if (connection === undefined || !this.index.remove(topic, connection)) return;
    this.leaveIfUnused(topic);
    this.metrics.topics.set(this.index.topicCount);
  }

  private leaveIfUnused(topic: string): void {
    if (this.index.subscribersOf(topic) === undefined) this.broker.leave('t', topic);
  }
}
