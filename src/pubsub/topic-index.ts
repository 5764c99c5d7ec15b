/**
 * Topic ⇄ subscriber index (pure). Generic over the subscriber type so it is
 * unit-testable without sockets.
 */
export class TopicIndex<S> {
  private readonly byTopic = new Map<string, Set<S>>();
  private readonly bySubscriber = new Map<S, Set<string>>();

  /** Returns true when the subscription is new. */
  add(topic: string, subscriber: S): boolean {
    let subs = this.byTopic.get(topic);
    if (subs === undefined) this.byTopic.set(topic, (subs = new Set()));
    if (subs.has(subscriber)) return false;
    subs.add(subscriber);
    let topics = this.bySubscriber.get(subscriber);
    if (topics === undefined) this.bySubscriber.set(subscriber, (topics = new Set()));
    topics.add(topic);
    return true;
  }

  /** Returns true when a subscription was removed. */
  remove(topic: string, subscriber: S): boolean {
    const subs = this.byTopic.get(topic);
    if (subs === undefined || !subs.delete(subscriber)) return false;
    if (subs.size === 0) this.byTopic.delete(topic);
    const topics = this.bySubscriber.get(subscriber)!;
    topics.delete(topic);
    if (topics.size === 0) this.bySubscriber.delete(subscriber);
    return true;
  }

  /** Drop every subscription of `subscriber`; returns its former topics. */
  removeSubscriber(subscriber: S): string[] {
    const topics = this.bySubscriber.get(subscriber);
    if (topics === undefined) return [];
    const list = [...topics];
    for (const topic of list) this.remove(topic, subscriber);
    return list;
  }

  subscribersOf(topic: string): ReadonlySet<S> | undefined {
    return this.byTopic.get(topic);
  }

  topicsOf(subscriber: S): ReadonlySet<string> | undefined {
    return this.bySubscriber.get(subscriber);
  }

  get topicCount(): number {
    return this.byTopic.size;
  }
}
