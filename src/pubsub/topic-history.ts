import { randomBytes } from 'node:crypto';
import { TopicPosition } from '../protocol/topic-position';

/** SPEC §12.4 bounds of the single-node history. */
export interface HistoryLimits {
  /** TOPIC_HISTORY_SIZE: frames kept per topic; 0 = none (offsets are still counted). */
  readonly size: number;
  /** TOPIC_HISTORY_TTL: a topic's history goes this long after its last publish. */
  readonly ttlMs: number;
  /** TOPIC_HISTORY_MAX_BYTES: payload bytes kept per topic. */
  readonly topicMaxBytes: number;
  /** HISTORY_MEMORY_MAX_BYTES: bytes of the frames kept across all topics. */
  readonly memoryMaxBytes: number;
}

/** SPEC §15.2: a topic's position and the number of messages its history keeps. */
export interface KeptHistory extends TopicPosition {
  readonly kept: number;
}

const NOTHING_KEPT: KeptHistory = Object.freeze({ epoch: null, offset: 0, kept: 0 });

/** One topic's history instance: its epoch, last offset and the frames still held (oldest first). */
interface TopicLog {
  readonly epoch: string;
  lastOffset: number;
  lastPublishAt: number;
  /** Positioned message frames of offsets `lastOffset - frames.length + 1 … lastOffset`. */
  readonly frames: Buffer[];
  /** The payload bytes of each frame, in step with `frames`. */
  readonly payloadSizes: number[];
  payloadBytes: number;
  frameBytes: number;
}

/** What a resumed session gets for one topic: the frames it missed, or `lost` (SPEC §12.3). */
export type Replay = { readonly isLost: false; readonly frames: readonly Buffer[] } | { readonly isLost: true };

const NOTHING: Replay = { isLost: false, frames: [] };
const LOST: Replay = { isLost: true };
/**
 * Over HISTORY_MEMORY_MAX_BYTES, frames go until this fraction of it is free
 * again: each pass over the topics then frees at least 1/16 of the bound, so
 * the pass costs O(1) per published byte, not O(topics) per publish.
 */
const MEMORY_TRIM_FRACTION = 1 / 16;

/**
 * Single-node topic history (SPEC §12.4): per topic, offsets 1, 2, 3… under a
 * random epoch, the last `size` frames holding at most `topicMaxBytes` of
 * payload (the oldest go first), dropped `ttlMs` after the topic's last
 * publish (a later publish starts a new epoch at offset 1). Over
 * `memoryMaxBytes` of frames in all, the oldest frames of the largest
 * histories go first. Every bound is kept in O(1) per publish (amortised).
 * Pure but for the random epoch; time is passed in.
 */
export class TopicHistory {
  private readonly logs = new Map<string, TopicLog>();
  private held = 0;
  private heldBytes = 0;

  constructor(private readonly limits: HistoryLimits) {}

  /** Frames held across all topics (the `gateway_topic_history_messages` gauge). */
  get messageCount(): number {
    return this.held;
  }

  /** Bytes of the frames held across all topics (bounded by `memoryMaxBytes`). */
  get byteCount(): number {
    return this.heldBytes;
  }

  /** The next position of `topic`, to be kept with `keep()` once its frame is encoded. */
  next(topic: string, nowMs: number): TopicPosition<string> {
    let log = this.logs.get(topic);
    if (log === undefined) {
      log = {
        epoch: newEpoch(),
        lastOffset: 0,
        lastPublishAt: nowMs,
        frames: [],
        payloadSizes: [],
        payloadBytes: 0,
        frameBytes: 0,
      };
      this.logs.set(topic, log);
    }
    log.lastOffset++;
    log.lastPublishAt = nowMs;
    return { offset: log.lastOffset, epoch: log.epoch };
  }

  /**
   * Keep the frame of the offset `next()` just gave, `payloadBytes` of it the
   * payload. The oldest frames go beyond `size` or `topicMaxBytes` (a payload
   * over `topicMaxBytes` is not kept at all), then beyond `memoryMaxBytes`.
   * The caller passes a frame that owns its memory (no slice of a shared pool).
   */
  keep(topic: string, frame: Buffer, payloadBytes: number): void {
    if (this.limits.size === 0) return;
    const log = this.logs.get(topic)!;
    log.frames.push(frame);
    log.payloadSizes.push(payloadBytes);
    log.payloadBytes += payloadBytes;
    log.frameBytes += frame.length;
    this.held++;
    this.heldBytes += frame.length;
    while (log.frames.length > this.limits.size || log.payloadBytes > this.limits.topicMaxBytes) this.dropOldest(log);
    if (this.heldBytes > this.limits.memoryMaxBytes) this.trimMemory();
  }

  /** SPEC §15.2: where `topic` stands and how many of its messages are kept. */
  kept(topic: string): KeptHistory {
    const log = this.logs.get(topic);
    return log === undefined ? NOTHING_KEPT : { epoch: log.epoch, offset: log.lastOffset, kept: log.frames.length };
  }

  /** Where `topic` stands now; offset 0 and no epoch when it has no history. */
  position(topic: string): TopicPosition {
    const log = this.logs.get(topic);
    // One shared start for topics never published: every resumable subscriber keeps the position it got.
    return log === undefined ? NEVER_PUBLISHED : { offset: log.lastOffset, epoch: log.epoch };
  }

  /**
   * The frames published after `from`. Lost when `from` names another epoch,
   * or when some of those frames are no longer held (never a partial replay).
   */
  replayAfter(topic: string, from: TopicPosition): Replay {
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
      if (nowMs - log.lastPublishAt < this.limits.ttlMs) continue;
      this.held -= log.frames.length;
      this.heldBytes -= log.frameBytes;
      this.logs.delete(topic);
    }
  }

  private dropOldest(log: TopicLog): void {
    const frame = log.frames.shift()!;
    log.payloadBytes -= log.payloadSizes.shift()!;
    log.frameBytes -= frame.length;
    this.held--;
    this.heldBytes -= frame.length;
  }

  /** SPEC §12.4: the oldest frames of the largest histories go, until the bound less its trim fraction is held. */
  private trimMemory(): void {
    const target = this.limits.memoryMaxBytes - Math.floor(this.limits.memoryMaxBytes * MEMORY_TRIM_FRACTION);
    const largest = new LargestFirst([...this.logs.values()].filter((log) => log.frames.length > 0));
    while (this.heldBytes > target) {
      const log = largest.top()!;
      this.dropOldest(log);
      if (log.frames.length === 0) largest.pop();
      else largest.shrunk();
    }
  }
}

/** A max-heap of histories by frame bytes: the largest on top; O(log n) per change. */
class LargestFirst {
  constructor(private readonly heap: TopicLog[]) {
    for (let i = (heap.length >> 1) - 1; i >= 0; i--) this.siftDown(i);
  }

  top(): TopicLog | undefined {
    return this.heap[0];
  }

  /** The top one lost frames: back to its place. */
  shrunk(): void {
    this.siftDown(0);
  }

  pop(): void {
    const last = this.heap.pop()!;
    if (this.heap.length === 0) return;
    this.heap[0] = last;
    this.siftDown(0);
  }

  private siftDown(at: number): void {
    const heap = this.heap;
    for (;;) {
      const left = 2 * at + 1;
      let largest = at;
      if (left < heap.length && heap[left].frameBytes > heap[largest].frameBytes) largest = left;
      if (left + 1 < heap.length && heap[left + 1].frameBytes > heap[largest].frameBytes) largest = left + 1;
      if (largest === at) return;
      [heap[at], heap[largest]] = [heap[largest], heap[at]];
      at = largest;
    }
  }
}

/** 48 random bits, base64url: enough that two instances of one topic's history never share an epoch. */
function newEpoch(): string {
  return randomBytes(6).toString('base64url');
}

const NEVER_PUBLISHED: TopicPosition = Object.freeze({ offset: 0, epoch: null });
