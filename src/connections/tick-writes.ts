import type { Writable } from 'node:stream';
import type { WebSocket } from 'ws';

/** ws internals read here (ws pinned at 8.21.2): the stream (net.Socket) a server-side socket writes to. */
interface WithStream {
  _socket?: Writable | null;
}

/** The stream under a ws socket; null when it has none (not a socket ws opened, or not yet). */
export function streamOf(socket: WebSocket): Writable | null {
  return (socket as unknown as WithStream)._socket ?? null;
}

/** A tick number no tick has: what a socket that never got a frame remembers. */
export const NO_TICK = -1;

/**
 * Coalesced writes (issue 33): the frames sent to one socket within one tick
 * leave in at most two writes, whatever their number. A tick runs until the
 * event loop's check phase (setImmediate): the I/O callbacks of one poll phase
 * (several publish requests, several upstream replies read together) share it,
 * with their promise jobs and the timers before them. The first frame of a
 * tick is written at once, as before: a socket that gets one frame in a tick
 * (a fan-out, a call's reply) waits for nothing. From its second frame in the
 * same tick on, the socket's stream is corked; at the check phase every stream
 * corked in the tick is uncorked, and Node hands the held chunks to the kernel
 * in one writev. A pending immediate keeps the poll phase from blocking, so
 * held frames wait for the callbacks already due, never for new I/O. ws frames
 * each message on its own, so the wire carries the same WebSocket messages,
 * in the same order.
 *
 * Bytes held until the tick ends count in ws' `bufferedAmount`, as bytes
 * accepted and not yet written (SPEC §9); {@link writeNow} offers them to the
 * kernel before a send is judged over the slow-consumer limit, so the verdict
 * is the one uncorked writes would get.
 */
export class TickWrites {
  /** The current tick, counted in ticks that sent frames. */
  private tick = 0;
  private isTickOpen = false;
  private corked: Writable[] = [];
  private readonly endTick = (): void => {
    this.tick++;
    this.isTickOpen = false;
    const corked = this.corked;
    this.corked = [];
    for (const stream of corked) stream.uncork();
  };

  /**
   * Call before writing a frame to `stream`, with what this returned before
   * the previous frame to it (or {@link NO_TICK}); returns what to pass next time.
   */
  beforeFrame(stream: Writable, lastTick: number): number {
    if (!this.isTickOpen) {
      this.isTickOpen = true;
      setImmediate(this.endTick);
    } else if (lastTick === this.tick && stream.writableCorked === 0) {
      stream.cork();
      this.corked.push(stream);
    }
    return this.tick;
  }

  /** Write what `stream` holds now, and go on holding for the rest of the tick. */
  writeNow(stream: Writable): void {
    if (stream.writableCorked === 0) return;
    stream.uncork();
    stream.cork();
  }
}

/** One per process: a tick is the process's. */
export const tickWrites = new TickWrites();
