/** SPEC §12.1: the subprotocol entries that opt into a resumable session and resume it. Pure. */
import { base64UrlLength, base64UrlOf, utf8Length } from './base64url';
import type { TopicPosition } from './topic-positions';

/** Offered beside the lattice protocol: "give me a resumable session". */
export const RESUME_SUBPROTOCOL = 'gateway-resume';
/** The gateway does not read a longer P (SPEC §12.1: 8 KiB). */
export const MAX_RESUME_OFFER_LENGTH = 8192;

/** A resume offer, and the topics whose positions did not fit in it. */
export interface ResumeOffer {
  /**
   * `gateway-resume.<P>`, P = base64url (no padding) of `{"token": T,
   * "count_replayed": true, "positions": {...}}`; `count_replayed` asks the
   * gateway to say in the resumed hello how many missed messages follow.
   */
  readonly protocol: string;
  /** Topics left out, least recent last; the gateway replays them from where the session subscribed (the client drops what it already had). */
  readonly omitted: readonly string[];
}

/**
 * The offer resuming the session of `token` from `positions` (most recent
 * first). P stays within `maxLength`: once a position does not fit, it and
 * every less recent one are left out, so the most recently active topics keep theirs.
 */
export function encodeResumeOffer(
  token: string,
  positions: readonly TopicPosition[],
  maxLength = MAX_RESUME_OFFER_LENGTH,
): ResumeOffer {
  const head = `{"token":${JSON.stringify(token)},"count_replayed":true,"positions":{`;
  const tail = '}}';
  let bytes = utf8Length(head) + tail.length;
  const entries: string[] = [];
  const omitted: string[] = [];
  for (const [topic, offset, epoch] of positions) {
    const entry = `${JSON.stringify(topic)}:[${offset},${JSON.stringify(epoch)}]`;
    const added = utf8Length(entry) + (entries.length === 0 ? 0 : 1);
    if (omitted.length === 0 && base64UrlLength(bytes + added) <= maxLength) {
      entries.push(entry);
      bytes += added;
    } else {
      omitted.push(topic);
    }
  }
  return { protocol: `${RESUME_SUBPROTOCOL}.${base64UrlOf(head + entries.join(',') + tail)}`, omitted };
}
