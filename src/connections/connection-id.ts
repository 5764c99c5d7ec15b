import { randomBytes } from 'node:crypto';

const SEPARATOR = '-';
const RANDOM_BYTES = 16; // 128 bits, SPEC §5 asks ≥ 96

/**
 * A new connection id `<nodeId>-<22 base64url chars>`: `[A-Za-z0-9_-]`, ≤ 55
 * chars, unguessable, and carrying the owner node (node ids have no `-`).
 */
export function newConnectionId(nodeId: string): string {
  return nodeId + SEPARATOR + randomBytes(RANDOM_BYTES).toString('base64url');
}

/** The owner node of a connection id, or null when it is not one of ours. */
export function nodeOfConnectionId(connectionId: string): string | null {
  const at = connectionId.indexOf(SEPARATOR);
  return at > 0 ? connectionId.slice(0, at) : null;
}
