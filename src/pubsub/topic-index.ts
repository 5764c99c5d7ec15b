/**
 * Topic ⇄ subscriber index (pure). Generic over the subscriber type so it is
 * unit-testable without sockets.
 */
export class TopicIndex<S> {
  private readonly byTopic = new Map<string, Set<S>>();
  /** A subscriber's one topic as itself (the usual case, no Set to hold); two or more in a Set. */
  private readonly bySubscriber = new Map<S, string | Set<string>>();

  /** Returns true when the subscription is new. */
  add(topic: string, subscriber: S): boolean {
    let subs = this.byTopic.get(topic);
    if (subs === undefined) this.byTopic.set(topic, (subs = new Set()));
    if (subs.has(subscriber)) return false;
    subs.add(subscriber);
    const topics = this.bySubscriber.get(subscriber);
    if (topics === undefined) this.bySubscriber.set(subscriber, topic);
    else if (typeof topics === 'string') this.bySubscriber.set(subscriber, new Set([topics, topic]));
    else topics.add(topic);
    return true;
  }

  /** Returns true when a subscription was removed. */
  remove(topic: string, subscriber: S): boolean {
    const subs = this.byTopic.get(topic);
    if (subs === undefined || !subs.delete(subscriber)) return false;
    if (subs.size === 0) this.byTopic.delete(topic);
    const topics = this.bySubscriber.get(subscriber)!;
    if (typeof topics === 'string') {
      this.bySubscriber.delete(subscriber);
    } else {
      topics.delete(topic);
      // Back to the one-topic form.
      if (topics.size === 1) this.bySubscriber.set(subscriber, topics.values().next().value!);
    }
    return true;
  }

  /** Drop every subscription of `subscriber`; returns its former topics. */
  removeSubscriber(subscriber: S): string[] {
    const topics = this.bySubscriber.get(subscriber);
    if (topics === undefined) return [];
    const list = typeof topics === 'string' ? [topics] : [...topics];
    for (const topic of list) this.remove(topic, subscriber);
    return list;
  }

  subscribersOf(topic: string): ReadonlySet<S> | undefined {
    return this.byTopic.get(topic);
  }

  /** The topics of `subscriber`, in the order subscribed; undefined when it has none. */
  topicsOf(subscriber: S): Iterable<string> | undefined {
    const topics = this.bySubscriber.get(subscriber);
    return typeof topics === 'string' ? [topics] : topics;
  }

  get topicCount(): number {
    return this.byTopic.size;
  }
}
