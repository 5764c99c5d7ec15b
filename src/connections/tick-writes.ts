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

/**
 * Coalesced writes (issue 33): the frames sent to one socket within one tick
 * leave in one write. The first frame of a tick corks the socket's stream;
 * once the tick's code, promise jobs included, has run (process.nextTick)
 * every stream corked in it is uncorked, and Node hands all its pending chunks
 * to the kernel in one writev. ws frames each message on its own, so the wire
 * carries the same WebSocket messages, in the same order. A socket that gets
 * one frame in a tick writes it when the tick ends, in one writev as before
 * (ws corks a frame's header and payload itself): no timer, no added wait.
 *
 * Bytes held until the tick ends count in ws' `bufferedAmount`, as bytes
 * accepted and not yet written (SPEC §9); {@link writeNow} offers them to the
 * kernel before a send is judged over the slow-consumer limit, so the verdict
 * is the one uncorked writes would get.
 */
export class TickWrites {
  private corked: Writable[] = [];
  private readonly uncorkAll = (): void => {
    const corked = this.corked;
    this.corked = [];
    for (const stream of corked) stream.uncork();
  };

  /** Hold `stream`'s writes until this tick ends (the first call of a tick per stream corks it). */
  hold(stream: Writable): void {
    if (stream.writableCorked !== 0) return;
    stream.cork();
    if (this.corked.push(stream) === 1) process.nextTick(this.uncorkAll);
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
