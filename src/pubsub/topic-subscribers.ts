import { Injectable } from '@nestjs/common';
import { Connection, PositionedFrame } from '../connections/connection';
import { GatewayMetrics } from '../metrics/gateway-metrics';
import { ResumablePositions } from './resumable-positions';
import { TopicIndex } from './topic-index';

/**
 * Who subscribes to what on this node (seed §4.2), where each resumable
 * subscriber subscribed (SPEC §12.3), and the only fan-out loop. Shared by
 * {@link PubSubService} (which changes subscriptions) and the topic stream
 * (which delivers publishes): neither mode's code keeps its own copy.
 */
@Injectable()
export class TopicSubscribers {
  readonly index = new TopicIndex<Connection>();
  readonly positions = new ResumablePositions();
  private readonly messagesSent;

  constructor(metrics: GatewayMetrics) {
    this.messagesSent = metrics.framesSent.labels('message');
  }

  /** Whether `topic` has a subscriber here. */
  has(topic: string): boolean {
    return this.index.hasSubscribers(topic);
  }

  /** How many subscribers `topic` has here. */
  countOf(topic: string): number {
    return this.index.subscriberCount(topic);
  }

  /**
   * The only fan-out loop: one Buffer to every local subscriber (the
   * positioned one to resumable subscribers, when there is one); pending ones
   * keep it for after hello.
   */
  deliver(topic: string, frame: Buffer | null, positioned: PositionedFrame | null = null): void {
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
    this.messagesSent.inc(this.index.subscriberCount(topic));
  }
}
