/** Reconnect delays: full-jitter exponential backoff. */

/** Backoff tuning, in milliseconds. */
export interface BackoffOptions {
  /** Upper bound of the first delay (default 1000: the first retry comes within 1 s). */
  readonly baseMs?: number;
  /** Upper bound of any delay (default 30000). */
  readonly capMs?: number;
}

export const DEFAULT_BACKOFF_BASE_MS = 1000;
export const DEFAULT_BACKOFF_CAP_MS = 30_000;

/**
 * The delay before retry number `attempt` (0 = the first retry after a loss),
 * "full jitter": a uniform draw in [0, min(cap, base * 2^attempt)). `random`
 * returns a number in [0, 1) like Math.random. A negative or fractional
 * attempt counts as the nearest lower non-negative integer.
 */
export function backoffDelayMs(
  attempt: number,
  random: () => number = Math.random,
  options: BackoffOptions = {},
): number {
  const baseMs = options.baseMs ?? DEFAULT_BACKOFF_BASE_MS;
  const capMs = options.capMs ?? DEFAULT_BACKOFF_CAP_MS;
  const step = Math.max(0, Math.floor(attempt));
  // 2^31 * base is beyond any cap; stop doubling there so the bound stays finite.
  const ceilingMs = Math.min(capMs, baseMs * 2 ** Math.min(step, 31));
  return Math.floor(random() * ceilingMs);
}
