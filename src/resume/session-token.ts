import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** Random bytes of a resume token: 192 bits, above SPEC §12.1's 128. */
const TOKEN_BYTES = 24;

/** A new resume token: 32 base64url characters (SPEC §12.1). */
export function newSessionToken(): string {
  return randomBytes(TOKEN_BYTES).toString('base64url');
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
