import { SetMap } from '../connections/set-map';

/**
 * Topic ⇄ subscriber index (pure). Generic over the subscriber type so it is
 * unit-testable without sockets. Both sides hold a key's one entry as itself
 * (a per-user topic's one subscriber, a connection's one topic): {@link SetMap}.
 */
export class TopicIndex<S> {
  private readonly byTopic = new SetMap<string, S>();
  private readonly bySubscriber = new SetMap<S, string>();

  /** Returns true when the subscription is new. */
  add(topic: string, subscriber: S): boolean {
    if (!this.byTopic.add(topic, subscriber)) return false;
    this.bySubscriber.add(subscriber, topic);
    return true;
  }

  /** Returns true when a subscription was removed. */
  remove(topic: string, subscriber: S): boolean {
    if (!this.byTopic.delete(topic, subscriber)) return false;
    this.bySubscriber.delete(subscriber, topic);
    return true;
  }

  /** Drop every subscription of `subscriber`; returns its former topics. */
  removeSubscriber(subscriber: S): string[] {
    const topics = this.bySubscriber.valuesOf(subscriber);
    if (topics === undefined) return [];
    const list = [...topics];
    for (const topic of list) this.remove(topic, subscriber);
    return list;
  }

  /** The subscribers of `topic`; undefined when it has none. Not to be changed while iterated. */
  subscribersOf(topic: string): Iterable<S> | undefined {
    return this.byTopic.valuesOf(topic);
  }

  subscriberCount(topic: string): number {
    return this.byTopic.countOf(topic);
  }

  hasSubscribers(topic: string): boolean {
    return this.byTopic.has(topic);
  }

  /** The topics of `subscriber`, in the order subscribed; undefined when it has none. */
  topicsOf(subscriber: S): Iterable<string> | undefined {
    return this.bySubscriber.valuesOf(subscriber);
  }

  get topicCount(): number {
    return this.byTopic.size;
  }
}
