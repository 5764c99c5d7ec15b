/**
 * The client's side of a resumable session (SPEC §12.1, §12.3, §12.7): the
 * token and window of the latest hello, the topic positions, and what the
 * next attempt offers. Pure: the caller passes the time.
 */
import type { HelloMeta, MessagePosition } from './frames';
import { encodeResumeOffer, RESUME_SUBPROTOCOL } from './resume-offer';
import { TopicPositions } from './topic-positions';

export class ResumeSession {
  private readonly positions = new TopicPositions();
  private token: string | null = null;
  private windowMs = 0;
  /** When the connection of the session was lost (the window runs from there), null while connected. */
  private lostAtMs: number | null = null;

  constructor(private readonly isEnabled: boolean) {}

  /**
   * The subprotocols of the next attempt: the lattice ones, then (when
   * enabled) the resume offer while the session's window lasts, else the bare opt-in.
   */
  protocolsAt(nowMs: number, lattice: readonly string[]): string[] {
    if (!this.isEnabled) return [...lattice];
    if (this.token !== null && this.lostAtMs !== null && nowMs - this.lostAtMs < this.windowMs) {
      return [...lattice, encodeResumeOffer(this.token, this.positions.mostRecentFirst()).protocol];
    }
    this.token = null; // past its window: the gateway has ended the session
    return [...lattice, RESUME_SUBPROTOCOL];
  }

  /**
   * A hello: keep its token (a new one each time, SPEC §12.1). true when it
   * resumed the session; otherwise a new session starts with no positions.
   */
  greeted(meta: HelloMeta): boolean {
    this.token = meta.resume?.token ?? null;
    this.windowMs = (meta.resume?.windowSeconds ?? 0) * 1000;
    this.lostAtMs = null;
    if (meta.resumed) return true;
    this.positions.clear();
    return false;
  }

  /**
   * A message arrived on `topic`: advance its position (before any handler
   * runs) and say whether to deliver it; false for a replayed one already
   * delivered. A message without a position (a legacy connection) is delivered.
   */
  received(topic: string, position: MessagePosition | null): boolean {
    return position === null || this.positions.advance(topic, position.offset, position.epoch);
  }

  /** The connection was lost at `nowMs`; the window runs from the first loss since the last hello. */
  lost(nowMs: number): void {
    this.lostAtMs ??= nowMs;
  }

  /** The session ended for good (the app closed, or the gateway said so): nothing to resume. */
  end(): void {
    this.token = null;
    this.lostAtMs = null;
    this.positions.clear();
  }
}
