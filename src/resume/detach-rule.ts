import { CLOSE_GOING_AWAY, REASON_SERVICE_RESTART, REASON_SLOW_CONSUMER } from '../protocol/close-codes';

/** Normal closure (RFC 6455): with 1001, the client's goodbye. */
const CLOSE_NORMAL = 1000;

/**
 * SPEC §12.2: whether a resumable session's socket ended without the
 * client's goodbye, so the session is detached rather than ended. `sent` is
 * the close we sent first (null when we did not), `peerCode` the code of the
 * client's close frame (1005 without a code, 1006 when none came).
 * Detached: TCP lost, ping timeout, a client close with any code but 1000 and
 * 1001, our slow-consumer close, our drain. Ended: the client's 1000/1001 and
 * every other close of ours (protocol faults, 4409, 4403).
 */
export function isDetachedByClose(sent: { readonly reason: string } | null, peerCode: number): boolean {
  if (sent !== null) return sent.reason === REASON_SLOW_CONSUMER || sent.reason === REASON_SERVICE_RESTART;
  return peerCode !== CLOSE_NORMAL && peerCode !== CLOSE_GOING_AWAY;
}
