/** Pure deadline math of SPEC §8. All times are epoch ms. */

/** `active: N` seconds, clamped to [min, max] ms. */
export function clampActiveMs(activeSeconds: number, minMs: number, maxMs: number): number {
  return Math.min(maxMs, Math.max(minMs, activeSeconds * 1000));
}

/** Deadlines only move forward: max(current, now + windowMs). */
export function extendDeadline(currentAt: number, nowMs: number, windowMs: number): number {
  return Math.max(currentAt, nowMs + windowMs);
}
