/** SPEC §12.2: one session may be resumed at most this many times… */
export const RESUMES_PER_WINDOW = 10;
/** …in this long (a fixed window from the first resume in it). */
export const RESUME_RATE_WINDOW_MS = 10_000;

/**
 * SPEC §12.2: at most 10 resumes of one session in 10 seconds; beyond that
 * the handshake gets HTTP 429 with Retry-After, before the upgrade. One
 * implementation per mode (STYLE 11): in memory on one node
 * ({@link MemoryResumeRate}), a counter in Redis in cluster mode
 * ({@link RedisResumeRate}), so a client alternating nodes gets 10 in all.
 */
export abstract class ResumeRate {
  /**
   * Before the upgrade: may a resume of the session `connectionId` (as its
   * token names it, unverified) go on? 0 when it may, else the ms until it
   * may. Counts nothing: only resumes that succeed count (see
   * {@link resumed}), so a forged token naming a session's id cannot use up
   * that session's resumes. Never rejects.
   */
  abstract admit(connectionId: string): number | Promise<number>;

  /** A resume of `connectionId` succeeded (its token was valid): counted against its 10 in 10 s. */
  abstract resumed(connectionId: string): void;
}
