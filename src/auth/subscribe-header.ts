import { isValidTopic } from '../protocol/identifiers';

/** SPEC §15.1: most topics one authorization answer may subscribe its connection to. */
export const MAX_SUBSCRIBE_TOPICS = 100;
/** How much of an invalid topic a log line shows (a header may be kilobytes long). */
const LOGGED_TOPIC_CHARS = 64;

/** The topics of a `Gateway-Subscribe` header (path form, each once), or why the answer is invalid. */
export type SubscribeHeader =
  { readonly ok: true; readonly topics: readonly string[] } | { readonly ok: false; readonly reason: string };

const NONE: SubscribeHeader = { ok: true, topics: [] };

/**
 * SPEC §15.1: `Gateway-Subscribe: <topic>[, <topic>...]`, topics in `/v1`
 * path form, at most 100, each valid as in §5. A comma-separated list as
 * RFC 9110 §5.6.1 has it: whitespace around elements and empty elements are
 * ignored, and several header lines are one list (Node joins them with `, `).
 * A repeated topic counts once. Pure; never throws.
 */
export function parseSubscribeHeader(value: string | undefined): SubscribeHeader {
  if (value === undefined) return NONE;
  const topics = new Set<string>();
  for (const element of value.split(',')) {
    const topic = element.trim();
    if (topic !== '') topics.add(topic);
  }
  if (topics.size > MAX_SUBSCRIBE_TOPICS) return invalid(`${topics.size} topics, at most ${MAX_SUBSCRIBE_TOPICS}`);
  for (const topic of topics) if (!isValidTopic(topic)) return invalid(`invalid topic ${JSON.stringify(shown(topic))}`);
  return topics.size === 0 ? NONE : { ok: true, topics: [...topics] };
}

function shown(topic: string): string {
  return topic.length <= LOGGED_TOPIC_CHARS ? topic : topic.slice(0, LOGGED_TOPIC_CHARS) + '…';
}

function invalid(cause: string): SubscribeHeader {
  return { ok: false, reason: `Gateway-Subscribe: ${cause}` };
}
