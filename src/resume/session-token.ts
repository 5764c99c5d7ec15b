import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { nodeOfConnectionId } from '../protocol/connection-id';

/** Random bytes of a resume token: 192 bits, above SPEC §12.1's 128. */
const TOKEN_BYTES = 24;
/** Their base64url length: the connection id follows. */
const RANDOM_CHARS = 32;
/** A connection id as we issue them (protocol/connection-id.ts): `<node id>-<22 base64url chars>`. */
const CONNECTION_ID = /^[A-Za-z0-9_]{4,32}-[A-Za-z0-9_-]{22}$/;

/**
 * A new resume token: 32 base64url characters of randomness, then the
 * session's connection id (opaque to clients, SPEC §12.1), so a node can tell
 * before the upgrade which session a resume names and bound its resumes
 * (SPEC §12.2) without a lookup. What makes it valid is its digest, stored by
 * the session: the id in it proves nothing.
 */
export function newSessionToken(connectionId: string): string {
  return randomBytes(TOKEN_BYTES).toString('base64url') + connectionId;
}

/**
 * The connection id a token names, unverified; null when it names none
 * (not a token of ours). Pure.
 */
export function connectionIdOfToken(token: string): string | null {
  const connectionId = token.slice(RANDOM_CHARS);
  return CONNECTION_ID.test(connectionId) && nodeOfConnectionId(connectionId) !== null ? connectionId : null;
}

/**
 * The digest under which a token is stored: only digests are kept, so a
 * memory dump or the Redis records (cluster) hold no usable token.
 */
export function tokenDigest(token: string): string {
  return createHash('sha256').update(token).digest('base64url');
}

/** Constant-time comparison of two digests (SPEC §12.1). */
export function isSameDigest(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}
