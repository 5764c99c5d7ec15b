/** `RELIABILITY_PROFILE=full` for the figures of record; anything else runs the short CI profile. */
export const PROFILE: 'short' | 'full' = process.env.RELIABILITY_PROFILE === 'full' ? 'full' : 'short';

/** The value for the current profile. */
export function sized<T>(values: { short: T; full: T }): T {
  return values[PROFILE];
}
