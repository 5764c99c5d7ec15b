import type { TopicPosition } from '../protocol/topic-position';

/**
 * SPEC §12.3: where a resumed session's replay of one topic starts. The
 * client's position when it offers one, never before the session's latest
 * subscription: an offered position of the subscription's epoch below the
 * subscription's offset counts as the subscription position. A position of
 * another epoch is left as it is (a history instance other than the one the
 * session subscribed in either began after the subscription, or makes the
 * topic lost). Without an offer, the subscription position. Pure.
 */
export function replayStart(offered: TopicPosition | undefined, subscribedAt: TopicPosition): TopicPosition {
  if (offered === undefined) return subscribedAt;
  return offered.epoch === subscribedAt.epoch && offered.offset < subscribedAt.offset ? subscribedAt : offered;
}
