import { Injectable, OnModuleInit } from '@nestjs/common';
import { Broker } from '../cluster/broker';
import { Connection } from '../connections/connection';
import { ConnectionRegistry } from '../connections/connection-registry';
import { GatewayMetrics } from '../metrics/gateway-metrics';
import { messageFrameHead } from '../protocol/frames';
import { pathToWire } from '../protocol/identifiers';
import { TopicIndex } from './topic-index';

const FRAME_TAIL = Buffer.from(']');

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
    this.broker.handle('topic_subscribe', (c) => this.applySubscribe(c.connectionId, c.topic));
    this.broker.handle('topic_unsubscribe', (c) => this.applyUnsubscribe(c.connectionId, c.topic));
    this.broker.handle('publish', (c) => this.deliverLocal(c.topic, c.frame));
    this.registry.onRemove((connection) => {
      this.index.removeSubscriber(connection);
      this.metrics.topics.set(this.index.topicCount);
    });
  }

  subscribe(connectionId: string, topic: string): Promise<void> {
    return this.broker.dispatch({ kind: 'topic_subscribe', connectionId, topic });
  }

  unsubscribe(connectionId: string, topic: string): Promise<void> {
    return this.broker.dispatch({ kind: 'topic_unsubscribe', connectionId, topic });
  }

  /** Publish `payload` (raw, already validated JSON bytes) to `topic`. */
  publish(topic: string, payload: Buffer): Promise<void> {
    const head = Buffer.from(messageFrameHead(pathToWire(topic)));
    const frame = Buffer.concat([head, payload, FRAME_TAIL], head.length + payload.length + 1);
    return this.broker.dispatch({ kind: 'publish', topic, frame });
  }

  /** The only fan-out loop: one Buffer to every local subscriber; pending ones keep it for after hello. */
  deliverLocal(topic: string, frame: Buffer): void {
    const subscribers = this.index.subscribersOf(topic);
    if (subscribers === undefined) return;
    for (const connection of subscribers) connection.sendOrKeep(frame);
    this.messagesSent.inc(subscribers.size);
  }

  private applySubscribe(connectionId: string, topic: string): void {
    const connection = this.registry.get(connectionId);
    if (connection === undefined || connection.state === 'closed') return;
    this.index.add(topic, connection);
    this.metrics.topics.set(this.index.topicCount);
  }

  private applyUnsubscribe(connectionId: string, topic: string): void {
    const connection = this.registry.get(connectionId);
    if (connection === undefined) return;
    this.index.remove(topic, connection);
    this.metrics.topics.set(this.index.topicCount);
  }
}
