/**
 * Where a topic stands, or where a subscriber stands in it (SPEC §12.4): the
 * offset of the last message, in the history instance `epoch`. `E` is
 * `string` where an epoch is always known (a client's position, a replayed
 * message); `string | null` where the topic may have no history yet (offset 0).
 */
export interface TopicPosition<E extends string | null = string | null> {
  readonly offset: number;
  readonly epoch: E;
}

/** No history: nothing numbered yet. */
export const NO_POSITION: TopicPosition = { offset: 0, epoch: null };
