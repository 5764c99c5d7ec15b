import type { Writable } from 'node:stream';
import type { WebSocket } from 'ws';
import { TopicPosition } from '../protocol/topic-position';
import type { Identity } from '../protocol/identity';
import { Handler } from '../config/gateway-config';
import { CLOSE_POLICY_VIOLATION, REASON_SLOW_CONSUMER } from '../protocol/close-codes';
import { NO_TICK, streamOf, tickWrites } from './tick-writes';

/**
 * pending: awaiting authorization; ready: `hello` sent; detached: a resumable
 * session whose socket is gone, waiting for its client (SPEC §12.2); closed: gone.
 */
export type ConnectionState = 'pending' | 'ready' | 'detached' | 'closed';

/** A client frame received before `hello`, replayed right after it (SPEC §3). */
export interface EarlyFrame {
  readonly data: Buffer;
  readonly isBinary: boolean;
}

const TEXT = { binary: false } as const;

/** A topic message frame with the position it carries (SPEC §12.4), encoded once per publish. */
export interface PositionedFrame extends TopicPosition<string> {
  readonly frame: Buffer;
  /** Path form (`a/b`). */
  readonly topic: string;
}

/**
 * One WebSocket client. Holds the frames that wait for `hello` in both
 * directions and enforces the slow-consumer rule on every send (SPEC §9).
 * A resumable one (SPEC §12) outlives its socket: it may be detached and
 * then take a new socket, keeping its id and everything attached to it.
 */
export class Connection {
  state: ConnectionState = 'pending';
  identity: Identity | null = null;
  /** Epoch ms of the last frame or pong from the client (heartbeat). */
  lastSeenAt = Date.now();
  /** Calls awaiting their upstream answer, queued or in flight (CLIENT_MAX_PENDING_CALLS, SPEC §1). */
  pendingCalls = 0;
  /** Client frames received before hello; null until one arrives (most connections never have any). */
  private earlyFrames: EarlyFrame[] | null = null;
  private earlyFramesBytes = 0;
  /** Topic message frames published before hello, in publish order; null until one is kept. */
  private earlyMessages: Buffer[] | null = null;
  private earlyMessagesBytes = 0;
  private isSlow = false;
  /** The tick of the last frame sent to this socket (coalesced writes, {@link TickWrites}). */
  private lastFrameTick = NO_TICK;
  /** Live positioned frames that arrived while a resume's replay was read (SPEC §12.3); null when not resuming. */
  private heldLive: PositionedFrame[] | null = null;
  /**
   * Per topic (path form), the position a resume's replay reached: a live frame
   * at or below it in the same epoch was replayed (or was before the client's
   * position) and is not sent again. An entry goes with the first frame beyond it.
   */
  private replayedUpTo: Map<string, TopicPosition<string>> | null = null;
  /**
   * Cluster mode (SPEC §12.5): the session's generation in its record (each
   * takeover increments it), and whether another node took it over: this
   * node then forgets it without any presence change.
   */
  generation = 0;
  isHandedOver = false;
  /** SPEC §14: epoch ms at which its authorization ends; 0 = never. Kept in its session record (cluster mode). */
  authEndsAt = 0;
  /** The close code and reason we sent, null while we have not closed. */
  closedWith: { readonly code: number; readonly reason: string } | null = null;

  constructor(
    readonly id: string,
    readonly handler: Handler,
    public socket: WebSocket,
    private readonly maxQueueBytes: number,
    private readonly onSlowConsumer: (connection: Connection) => void,
    /** Opted into a resumable session (SPEC §12.1): message frames carry positions. */
    readonly isResumable = false,
  ) {}

  /** The authorized user, null before hello. */
  get userId(): string | null {
    return this.identity === null ? null : this.identity.userId;
  }

  get isReady(): boolean {
    return this.state === 'ready';
  }

  /**
   * Send one text frame to a ready connection. Returns false when it was not
   * sent (not ready, closing, or over the slow-consumer limit, which closes it).
   */
  send(frame: Buffer | string): boolean {
    if (this.state !== 'ready' || this.isSlow) return false;
    const stream = streamOf(this.socket);
    if (this.socket.bufferedAmount > this.maxQueueBytes && this.isOverQueueLimit(stream)) {
      this.closeAsSlowConsumer();
      return false;
    }
    // A second frame in one tick is held, with those after it, for one write when the tick ends.
    if (stream !== null) this.lastFrameTick = tickWrites.beforeFrame(stream, this.lastFrameTick);
    this.socket.send(frame, TEXT);
    return true;
  }

  /**
   * Send now when ready; keep for after hello when pending (topic messages,
   * SPEC §3). Kept frames are accepted and unsent, so the slow-consumer limit
   * bounds them too (SPEC §9): beyond it the pending connection is closed.
   */
  sendOrKeep(frame: Buffer): void {
    if (this.state !== 'pending') return void this.send(frame);
    if (this.isSlow) return;
    this.earlyMessagesBytes += frame.length;
    if (this.earlyMessagesBytes > this.maxQueueBytes) {
      this.earlyMessages = null;
      return this.closeAsSlowConsumer();
    }
    (this.earlyMessages ??= []).push(frame);
  }

  /**
   * A positioned frame to a resumable connection (SPEC §12.4): dropped when a
   * resume's replay covered it, held while the replay is being read, else as
   * {@link sendOrKeep}.
   */
  sendPositioned(positioned: PositionedFrame): void {
    if (this.replayedUpTo !== null && this.wasReplayed(positioned)) return;
    if (this.heldLive === null || this.state !== 'pending') return this.sendOrKeep(positioned.frame);
    if (this.isSlow) return;
    this.earlyMessagesBytes += positioned.frame.length;
    if (this.earlyMessagesBytes > this.maxQueueBytes) {
      this.heldLive = null;
      return this.closeAsSlowConsumer();
    }
    this.heldLive.push(positioned);
  }

  /**
   * SPEC §12.3: a resumed session waits for its replay to be read (from Redis
   * in cluster mode) as a new connection waits for hello: pending, so live
   * topic frames are held and client frames kept for after it.
   */
  holdForReplay(): void {
    this.state = 'pending';
    this.heldLive = [];
    this.replayedUpTo = null;
  }

  /**
   * The replay is out: ready again. Returns the frames held meanwhile that
   * go beyond `upTo` (the rest were replayed), in arrival order; later live
   * frames are checked against `upTo` too, until one goes beyond it.
   */
  endReplayHold(upTo: ReadonlyMap<string, TopicPosition<string>>): PositionedFrame[] {
    const held = this.heldLive ?? [];
    this.heldLive = null;
    this.state = 'ready';
    this.replayedUpTo = upTo.size === 0 ? null : new Map(upTo);
    return held.filter((positioned) => this.replayedUpTo === null || !this.wasReplayed(positioned));
  }

  /**
   * Keep a client frame for after hello. Returns false, keeping nothing, when
   * the kept frames would exceed `maxBytes`.
   */
  keepEarlyFrame(frame: EarlyFrame, maxBytes: number): boolean {
    this.earlyFramesBytes += frame.data.length;
    if (this.earlyFramesBytes > maxBytes) return false;
    (this.earlyFrames ??= []).push(frame);
    return true;
  }

  /** Hand over (and forget) what was kept before hello. */
  takeEarly(): { messages: Buffer[]; frames: EarlyFrame[] } {
    const early = { messages: this.earlyMessages ?? [], frames: this.earlyFrames ?? [] };
    this.earlyMessages = null;
    this.earlyMessagesBytes = 0;
    this.earlyFrames = null;
    this.earlyFramesBytes = 0;
    return early;
  }

  /**
   * Send a last frame (if any) and close with `code`/`reason`. The server's ws
   * `closeTimeout` destroys the TCP connection if the client does not finish
   * the closing handshake in time (SPEC §9, issue 11).
   */
  close(code: number, reason: string, lastFrame?: string): void {
    if (this.state === 'closed') return;
    this.state = 'closed';
    this.closedWith = { code, reason };
    if (lastFrame !== undefined && this.socket.readyState === this.socket.OPEN) this.socket.send(lastFrame, TEXT);
    this.socket.close(code, reason);
  }

  /** SPEC §12.3: a resumed session takes a new socket; it is ready again with a clean slate. */
  attachSocket(socket: WebSocket): void {
    this.socket = socket;
    this.state = 'ready';
    this.isSlow = false;
    this.lastFrameTick = NO_TICK;
    this.closedWith = null;
    this.lastSeenAt = Date.now();
    this.heldLive = null;
    this.replayedUpTo = null;
  }

  /** Whether `positioned` is at or below what the replay reached on its topic; the check ends past it. */
  private wasReplayed(positioned: PositionedFrame): boolean {
    const upTo = this.replayedUpTo!.get(positioned.topic);
    if (upTo === undefined) return false;
    if (upTo.epoch === positioned.epoch && positioned.offset <= upTo.offset) return true;
    this.replayedUpTo!.delete(positioned.topic);
    if (this.replayedUpTo!.size === 0) this.replayedUpTo = null;
    return false;
  }

  /** Over the limit even once what this tick held back is offered to the kernel (SPEC §9 counts unwritten bytes). */
  private isOverQueueLimit(stream: Writable | null): boolean {
    if (stream !== null) tickWrites.writeNow(stream);
    return this.socket.bufferedAmount > this.maxQueueBytes;
  }

  private closeAsSlowConsumer(): void {
    this.isSlow = true;
    this.onSlowConsumer(this);
    this.close(CLOSE_POLICY_VIOLATION, REASON_SLOW_CONSUMER);
  }
}
