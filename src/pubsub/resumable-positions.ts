import type { HistoryPosition } from './topic-history';

/**
 * SPEC §12.3/12.4: for resumable subscribers only, the topic position at
 * which each subscription began (where a replay starts when the client sends
 * no position), and how many resumable subscribers each topic has (a topic
 * with none keeps no history). Pure; generic over the subscriber type.
 */
export class ResumablePositions<S = object> {
  private readonly bySubscriber = new Map<S, Map<string, HistoryPosition>>();
  private readonly subscriberCounts = new Map<string, number>();

  hasSubscribers(topic: string): boolean {
    return this.subscriberCounts.has(topic);
  }

  /** How many resumable subscribers `topic` has. */
  subscriberCount(topic: string): number {
    return this.subscriberCounts.get(topic) ?? 0;
  }

  subscribed(subscriber: S, topic: string, at: HistoryPosition): void {
    let topics = this.bySubscriber.get(subscriber);
    if (topics === undefined) this.bySubscriber.set(subscriber, (topics = new Map()));
    topics.set(topic, at);
    this.subscriberCounts.set(topic, (this.subscriberCounts.get(topic) ?? 0) + 1);
  }

  /** The subscription's start, learnt later (cluster mode reads it from Redis); ignored once unsubscribed. */
  startsAt(subscriber: S, topic: string, at: HistoryPosition): void {
    const topics = this.bySubscriber.get(subscriber);
    if (topics?.has(topic)) topics.set(topic, at);
  }

  unsubscribed(subscriber: S, topic: string): void {
    const topics = this.bySubscriber.get(subscriber);
    if (topics === undefined || !topics.delete(topic)) return;
    if (topics.size === 0) this.bySubscriber.delete(subscriber);
    this.release(topic);
  }

  forgetSubscriber(subscriber: S): void {
    const topics = this.bySubscriber.get(subscriber);
    if (topics === undefined) return;
    this.bySubscriber.delete(subscriber);
    for (const topic of topics.keys()) this.release(topic);
  }

  /** Where `subscriber`'s subscription to `topic` began; the start of history when unknown. */
  subscribedAt(subscriber: S, topic: string): HistoryPosition {
    return this.bySubscriber.get(subscriber)?.get(topic) ?? START;
  }

  private release(topic: string): void {
    const count = this.subscriberCounts.get(topic)! - 1;
    if (count === 0) this.subscriberCounts.delete(topic);
    else this.subscriberCounts.set(topic, count);
  }
}

const START: HistoryPosition = { offset: 0, epoch: null };
