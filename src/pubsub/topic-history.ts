import { randomBytes } from 'node:crypto';

/** A topic position (SPEC §12.4); `epoch` null = the topic had no history then. */
export interface HistoryPosition {
  readonly offset: number;
  readonly epoch: string | null;
}

/** One topic's history instance: its epoch, last offset and the frames still held (oldest first). */
interface TopicLog {
  readonly epoch: string;
  lastOffset: number;
  lastPublishAt: number;
  /** Positioned message frames of offsets `lastOffset - frames.length + 1 … lastOffset`. */
  readonly frames: Buffer[];
}

/** What a resumed session gets for one topic: the frames it missed, or `lost` (SPEC §12.3). */
export type Replay = { readonly isLost: false; readonly frames: readonly Buffer[] } | { readonly isLost: true };

const NOTHING: Replay = { isLost: false, frames: [] };
const LOST: Replay = { isLost: true };

/**
 * Single-node topic history (SPEC §12.4): per topic, offsets 1, 2, 3… under a
 * random epoch, the last `size` frames, dropped `ttlMs` after the topic's last
 * publish (a later publish starts a new epoch at offset 1). Pure but for the
 * random epoch; time is passed in.
 */
export class TopicHistory {
  private readonly logs = new Map<string, TopicLog>();
  private held = 0;

  constructor(
    private readonly size: number,
    private readonly ttlMs: number,
  ) {}

  /** Frames held across all topics (the `gateway_topic_history_messages` gauge). */
  get messageCount(): number {
    return this.held;
  }

  /** The next position of `topic`, to be kept with `keep()` once its frame is encoded. */
  next(topic: string, nowMs: number): { readonly offset: number; readonly epoch: string } {
    let log = this.logs.get(topic);
    if (log === undefined) this.logs.set(topic, (log = { epoch: newEpoch(), lastOffset: 0, lastPublishAt: nowMs, frames: [] }));
    log.lastOffset++;
    log.lastPublishAt = nowMs;
    return { offset: log.lastOffset, epoch: log.epoch };
  }

  /** Keep the frame of the offset `next()` just gave (the oldest goes beyond `size`). */
  keep(topic: string, frame: Buffer): void {
    if (this.size === 0) return;
    const frames = this.logs.get(topic)!.frames;
    frames.push(frame);
    if (frames.length > this.size) frames.shift();
    else this.held++;
  }

  /** Where `topic` stands now; offset 0 and no epoch when it has no history. */
  position(topic: string): HistoryPosition {
    const log = this.logs.get(topic);
    // One shared start for topics never published: every resumable subscriber keeps the position it got.
    return log === undefined ? NEVER_PUBLISHED : { offset: log.lastOffset, epoch: log.epoch };
  }

  /**
   * The frames published after `from`. Lost when `from` names another epoch,
   * or when some of those frames are no longer held (never a partial replay).
   */
  replayAfter(topic: string, from: HistoryPosition): Replay {
    const log = this.logs.get(topic);
    if (log === undefined) return NOTHING;
    if (from.epoch !== null && from.epoch !== log.epoch) return LOST;
    const missed = log.lastOffset - from.offset;
    if (missed <= 0) return NOTHING;
    if (missed > log.frames.length) return LOST;
    return { isLost: false, frames: log.frames.slice(log.frames.length - missed) };
  }

  /** Drop the histories whose last publish is older than the TTL. */
  sweep(nowMs: number): void {
    for (const [topic, log] of this.logs) {
      if (nowMs - log.lastPublishAt < this.ttlMs) continue;
      this.held -= log.frames.length;
      this.logs.delete(topic);
    }
  }
}

/** 48 random bits, base64url: enough that two instances of one topic's history never share an epoch. */
function newEpoch(): string {
  return randomBytes(6).toString('base64url');
}

const NEVER_PUBLISHED: HistoryPosition = Object.freeze({ offset: 0, epoch: null });
