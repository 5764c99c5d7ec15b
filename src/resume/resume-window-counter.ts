import { RESUMES_PER_WINDOW, RESUME_RATE_WINDOW_MS } from './resume-rate';

interface Window {
  count: number;
  readonly endsAt: number;
}

/**
 * Fixed-window counts of resumes per session (one node): the resumes that
 * succeeded, the window running from its first. Pure;
 * time is passed in. Windows all last as long, so the oldest comes first in
 * the map and expired ones are dropped from its front: O(1) amortised.
 */
export class ResumeWindowCounter {
  private readonly windows = new Map<string, Window>();

  constructor(
    private readonly maxPerWindow = RESUMES_PER_WINDOW,
    private readonly windowMs = RESUME_RATE_WINDOW_MS,
  ) {}

  /** 0 when `sessionId` may resume now, else the ms until its window ends (it had its resumes in it). */
  waitMs(sessionId: string, nowMs: number): number {
    this.dropExpired(nowMs);
    const window = this.windows.get(sessionId);
    return window === undefined || window.count < this.maxPerWindow ? 0 : window.endsAt - nowMs;
  }

  /** Count a resume of `sessionId` that succeeded. */
  hit(sessionId: string, nowMs: number): void {
    this.dropExpired(nowMs);
    const window = this.windows.get(sessionId);
    if (window === undefined) this.windows.set(sessionId, { count: 1, endsAt: nowMs + this.windowMs });
    else window.count++;
  }

  /** Sessions with a window open (for tests of the bound on memory). */
  get size(): number {
    return this.windows.size;
  }

  private dropExpired(nowMs: number): void {
    for (const [sessionId, window] of this.windows) {
      if (window.endsAt > nowMs) return;
      this.windows.delete(sessionId);
    }
  }
}
