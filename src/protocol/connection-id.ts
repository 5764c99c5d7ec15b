import { randomBytes } from 'node:crypto';

const SEPARATOR = '-';
const RANDOM_BYTES = 16; // 128 bits, SPEC §5 asks ≥ 96
/** Ids drawn per call into the CSPRNG: one call per 256 connections, not one each. */
const POOL_IDS = 256;

let pool = Buffer.alloc(0);
let poolOffset = 0;

/**
 * A new connection id `<nodeId>-<22 base64url chars>`: `[A-Za-z0-9_-]`, ≤ 55
 * chars, unguessable, and carrying the owner node (node ids have no `-`).
 */
export function newConnectionId(nodeId: string): string {
  if (poolOffset === pool.length) {
    pool = randomBytes(RANDOM_BYTES * POOL_IDS);
    poolOffset = 0;
  }
  const random = pool.toString('base64url', poolOffset, (poolOffset += RANDOM_BYTES));
  return nodeId + SEPARATOR + random;
}

/** The owner node of a connection id, or null when it is not one of ours. */
export function nodeOfConnectionId(connectionId: string): string | null {
  const at = connectionId.indexOf(SEPARATOR);
  return at > 0 ? connectionId.slice(0, at) : null;
}
