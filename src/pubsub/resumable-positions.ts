import type { TopicPosition } from '../protocol/topic-position';

/** A subscriber's only topic and where it began: most sessions have one, and a Map costs ~150 bytes more. */
class OneTopic {
  constructor(
    readonly topic: string,
    public at: TopicPosition,
  ) {}
}

/**
 * SPEC §12.3/12.4: for resumable subscribers only, the topic position at
 * which each subscription began (where a replay starts when the client sends
 * no position), and how many resumable subscribers each topic has (a topic
 * with none keeps no history). Pure; generic over the subscriber type.
 */
export class ResumablePositions<S = object> {
  private readonly bySubscriber = new Map<S, OneTopic | Map<string, TopicPosition>>();
  private readonly subscriberCounts = new Map<string, number>();

  hasSubscribers(topic: string): boolean {
    return this.subscriberCounts.has(topic);
  }

  /** How many resumable subscribers `topic` has. */
  subscriberCount(topic: string): number {
    return this.subscriberCounts.get(topic) ?? 0;
  }

  subscribed(subscriber: S, topic: string, at: TopicPosition): void {
    const topics = this.bySubscriber.get(subscriber);
    if (topics === undefined) {
      this.bySubscriber.set(subscriber, new OneTopic(topic, at));
    } else if (topics instanceof Map) {
      const isCounted = topics.has(topic);
      topics.set(topic, at);
      if (isCounted) return;
    } else if (topics.topic === topic) {
      topics.at = at;
      return; // already counted
    } else {
      this.bySubscriber.set(
        subscriber,
        new Map([
          [topics.topic, topics.at],
          [topic, at],
        ]),
      );
    }
    this.subscriberCounts.set(topic, (this.subscriberCounts.get(topic) ?? 0) + 1);
  }

  /** The subscription's start, learnt later (cluster mode reads it from Redis); ignored once unsubscribed. */
  startsAt(subscriber: S, topic: string, at: TopicPosition): void {
    const topics = this.bySubscriber.get(subscriber);
    if (topics instanceof Map) {
      if (topics.has(topic)) topics.set(topic, at);
    } else if (topics?.topic === topic) {
      topics.at = at;
    }
  }

  unsubscribed(subscriber: S, topic: string): void {
    const topics = this.bySubscriber.get(subscriber);
    if (topics === undefined) return;
    if (topics instanceof Map) {
      if (!topics.delete(topic)) return;
      if (topics.size === 0) this.bySubscriber.delete(subscriber);
    } else {
      if (topics.topic !== topic) return;
      this.bySubscriber.delete(subscriber);
    }
    this.release(topic);
  }

  forgetSubscriber(subscriber: S): void {
    const topics = this.bySubscriber.get(subscriber);
    if (topics === undefined) return;
    this.bySubscriber.delete(subscriber);
    if (topics instanceof Map) for (const topic of topics.keys()) this.release(topic);
    else this.release(topics.topic);
  }

  /** Where `subscriber`'s subscription to `topic` began; the start of history when unknown. */
  subscribedAt(subscriber: S, topic: string): TopicPosition {
    const topics = this.bySubscriber.get(subscriber);
    if (topics instanceof Map) return topics.get(topic) ?? START;
    return topics?.topic === topic ? topics.at : START;
  }

  private release(topic: string): void {
    const count = this.subscriberCounts.get(topic)! - 1;
    if (count === 0) this.subscriberCounts.delete(topic);
    else this.subscriberCounts.set(topic, count);
  }
}

const START: TopicPosition = { offset: 0, epoch: null };
