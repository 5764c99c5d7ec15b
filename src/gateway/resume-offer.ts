import { isValidTopic } from '../protocol/identifiers';
import { TopicPosition } from '../protocol/topic-position';

/** The extra subprotocol that opts into a resumable session (SPEC §12.1); never echoed. */
export const RESUME_SUBPROTOCOL = 'gateway-resume';
const RESUME_PREFIX = RESUME_SUBPROTOCOL + '.';
/** SPEC §12.1: a longer offer is not read. */
export const MAX_RESUME_OFFER_BYTES = 8192;
/** Tokens we issue are at most 87 characters (32 random, then the connection id); anything far longer is not one of ours. */
const MAX_TOKEN_LENGTH = 128;
const MAX_EPOCH_LENGTH = 64;
const BASE64URL = /^[A-Za-z0-9_-]+$/;

/** A well-formed resume offer; `positions` is keyed by topic in path form (`a/b`). */
export interface ResumeOffer {
  readonly token: string;
  readonly positions: ReadonlyMap<string, TopicPosition<string>>;
  /**
   * **[ext]** `"count_replayed": true` in P: the resumed hello also says how
   * many missed messages follow (`"replayed": N`), so the client library can
   * tell "resumed, N replayed" (SPEC §12.7). Without it the meta is §12.3's exactly.
   */
  readonly countReplayed: boolean;
}

/**
 * What a handshake asks for: nothing (legacy), a new resumable session, a
 * resume with a well-formed offer, or a resume whose offer cannot be read
 * (SPEC §12.3: a normal connect with `resumed: false`).
 */
export type ResumeRequest =
  | { readonly kind: 'none' }
  | { readonly kind: 'opt-in' }
  | { readonly kind: 'resume'; readonly offer: ResumeOffer }
  | { readonly kind: 'unreadable' };

const NONE: ResumeRequest = { kind: 'none' };
const OPT_IN: ResumeRequest = { kind: 'opt-in' };
const UNREADABLE: ResumeRequest = { kind: 'unreadable' };

/**
 * SPEC §12.1: read the resume entries of a `Sec-WebSocket-Protocol` header.
 * `gateway-resume.<P>` wins over a bare `gateway-resume`. Pure; never throws.
 */
export function resumeRequestOf(header: string | undefined): ResumeRequest {
  if (header === undefined || !header.includes(RESUME_SUBPROTOCOL)) return NONE;
  let request = NONE;
  for (const entry of header.split(',')) {
    const protocol = entry.trim();
    if (protocol.startsWith(RESUME_PREFIX)) return parseOffer(protocol.slice(RESUME_PREFIX.length));
    if (protocol === RESUME_SUBPROTOCOL) request = OPT_IN;
  }
  return request;
}

/** P = base64url (no padding) of `{"token": T, "positions": {"<topic>": [offset, "epoch"]}, "count_replayed"?: true}`. */
export function parseOffer(encoded: string): ResumeRequest {
  if (encoded.length > MAX_RESUME_OFFER_BYTES || !BASE64URL.test(encoded)) return UNREADABLE;
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(encoded, 'base64url').toString('utf8'));
  } catch {
    return UNREADABLE;
  }
  if (!isPlainObject(json)) return UNREADABLE;
  const { token, positions, count_replayed: countReplayed } = json;
  if (typeof token !== 'string' || token.length === 0 || token.length > MAX_TOKEN_LENGTH || !BASE64URL.test(token))
    return UNREADABLE;
  const parsed = positions === undefined ? new Map<string, TopicPosition<string>>() : parsePositions(positions);
  return parsed === null
    ? UNREADABLE
    : { kind: 'resume', offer: { token, positions: parsed, countReplayed: countReplayed === true } };
}

function parsePositions(value: unknown): Map<string, TopicPosition<string>> | null {
  if (!isPlainObject(value)) return null;
  const positions = new Map<string, TopicPosition<string>>();
  for (const wireTopic of Object.keys(value)) {
    const topic = wireTopic.replaceAll('.', '/');
    const position = value[wireTopic];
    if (!isValidTopic(topic) || !Array.isArray(position) || position.length !== 2) return null;
    const [offset, epoch] = position as unknown[];
    if (!Number.isSafeInteger(offset) || (offset as number) < 0) return null;
    if (typeof epoch !== 'string' || epoch.length === 0 || epoch.length > MAX_EPOCH_LENGTH) return null;
    positions.set(topic, { offset: offset as number, epoch });
  }
  return positions;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
