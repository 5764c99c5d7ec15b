/**
 * SPEC §12.4, §12.7: the position `[offset, epoch]` of the last message the
 * client received on each topic of its session. Pure, no I/O.
 */

/** A topic's position, and when it last advanced (a counter: larger is more recent). */
interface Entry {
  offset: number;
  epoch: string;
  advancedAt: number;
}

/** A topic and its position, as a resume offer lists them (topic in wire form, `a.b`). */
export type TopicPosition = readonly [topic: string, offset: number, epoch: string];

export class TopicPositions {
  private readonly byTopic = new Map<string, Entry>();
  private advances = 0;

  /**
   * A message at `offset` of history `epoch` arrived on `topic`: advance the
   * topic's position and say whether the message is new. false: a replayed
   * message already received (offset ≤ position, same epoch), to be dropped.
   * Another epoch starts the topic afresh (its history was lost).
   */
  advance(topic: string, offset: number, epoch: string): boolean {
    const entry = this.byTopic.get(topic);
    if (entry === undefined) {
      this.byTopic.set(topic, { offset, epoch, advancedAt: ++this.advances });
      return true;
    }
    if (entry.epoch === epoch && offset <= entry.offset) return false;
    entry.offset = offset;
    entry.epoch = epoch;
    entry.advancedAt = ++this.advances;
    return true;
  }

  /** Every position, the topic that advanced last first. */
  mostRecentFirst(): TopicPosition[] {
    return [...this.byTopic]
      .sort(([, a], [, b]) => b.advancedAt - a.advancedAt)
      .map(([topic, { offset, epoch }]) => [topic, offset, epoch] as const);
  }

  get size(): number {
    return this.byTopic.size;
  }

  /** A new session: no positions. */
  clear(): void {
    this.byTopic.clear();
  }
}
