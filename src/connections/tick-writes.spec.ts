import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { WebSocket, WebSocketServer } from 'ws';
import type { Handler } from '../config/gateway-config';
import { Connection } from './connection';
import { NO_TICK, TickWrites, streamOf } from './tick-writes';

const HANDLER = { name: 'chat1', path: '/', messageHandlers: new Map() } as Handler;

/** A real Writable that records each call to the "kernel": one entry per write, with the chunks it carried. */
class RecordingStream extends Writable {
  readonly writes: string[][] = [];

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: () => void): void {
    this.writes.push([chunk.toString()]);
    done();
  }

  override _writev(chunks: { chunk: Buffer }[], done: () => void): void {
    this.writes.push(chunks.map(({ chunk }) => chunk.toString()));
    done();
  }
}

/** Resolves once the tick has ended: the immediates scheduled so far (the uncork included) have run. */
const tickEnd = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('TickWrites (issue 33: coalesced writes)', () => {
  /** Each stream's frames, sent with the tick it last got a frame in, as Connection.send does. */
  function sender(sut: TickWrites) {
    const lastTicks = new Map<Writable, number>();
    return (stream: Writable, frame: string): void => {
      lastTicks.set(stream, sut.beforeFrame(stream, lastTicks.get(stream) ?? NO_TICK));
      stream.write(frame);
    };
  }

  const cases: {
    name: string;
    /** Per tick, the frames sent, as [stream index, frame]. */
    ticks: [number, string][][];
    /** Per stream, its writes before its tick ended, then all of them. */
    atOnce: string[][][];
    all: string[][][];
  }[] = [
    { name: 'one frame in a tick: written at once', ticks: [[[0, 'a']]], atOnce: [[['a']]], all: [[['a']]] },
    {
      name: 'three frames in a tick: the first at once, the others in one write when the tick ends',
      ticks: [
        [
          [0, 'a'],
          [0, 'b'],
          [0, 'c'],
        ],
      ],
      atOnce: [[['a']]],
      all: [[['a'], ['b', 'c']]],
    },
    {
      name: 'a frame per tick: each written at once',
      ticks: [[[0, 'a']], [[0, 'b']]],
      atOnce: [[['a'], ['b']]],
      all: [[['a'], ['b']]],
    },
    {
      name: 'two streams in a tick, interleaved: their own writes, none mixed',
      ticks: [
        [
          [0, 'a1'],
          [1, 'b1'],
          [0, 'a2'],
          [1, 'b2'],
          [1, 'b3'],
        ],
      ],
      atOnce: [[['a1']], [['b1']]],
      all: [
        [['a1'], ['a2']],
        [['b1'], ['b2', 'b3']],
      ],
    },
  ];

  it.each(cases)('$name', async ({ ticks, atOnce, all }) => {
    const send = sender(new TickWrites());
    const streams = all.map(() => new RecordingStream());
    const before: string[][][] = streams.map(() => []);
    for (const tick of ticks) {
      for (const [i, frame] of tick) send(streams[i], frame);
      streams.forEach((stream, i) => before[i].push(...stream.writes.slice(before[i].length)));
      await tickEnd();
    }
    expect(before).toEqual(atOnce);
    expect(streams.map((s) => s.writes)).toEqual(all);
  });

  it('writeNow writes what is held at once and holds what follows until the tick ends', async () => {
    const sut = new TickWrites();
    const send = sender(sut);
    const stream = new RecordingStream();
    for (const frame of ['a', 'b', 'c']) send(stream, frame);
    sut.writeNow(stream);
    expect(stream.writes).toEqual([['a'], ['b', 'c']]);
    send(stream, 'd');
    expect(stream.writes).toEqual([['a'], ['b', 'c']]);
    await tickEnd();
    expect(stream.writes).toEqual([['a'], ['b', 'c'], ['d']]);
  });

  it('frames sent by separate callbacks of one event-loop phase share a tick: the second and later leave in one write', async () => {
    const send = sender(new TickWrites());
    const stream = new RecordingStream();
    // Two timers due together run in one timers phase, each with its own process.nextTick and
    // promise jobs after it, as the I/O callbacks of one poll phase do (publishes, upstream replies).
    const callbacks = ['a', 'b', 'c'].map(
      (frame) => new Promise<void>((resolve) => setTimeout(() => resolve(send(stream, frame)), 0)),
    );
    await Promise.all(callbacks);
    expect(stream.writes).toEqual([['a']]);
    await tickEnd();
    expect(stream.writes).toEqual([['a'], ['b', 'c']]);
  });

  /** A real ws server socket and its client over loopback, for `fn`; both closed after. */
  async function withSocketPair(fn: (serverSide: WebSocket, client: WebSocket) => Promise<void>): Promise<void> {
    const server = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    let client: WebSocket | null = null;
    try {
      await new Promise((resolve) => server.once('listening', resolve));
      const { port } = server.address() as AddressInfo;
      const accepted = new Promise<WebSocket>((resolve) => server.once('connection', resolve));
      client = new WebSocket(`ws://127.0.0.1:${port}`);
      const serverSide = await accepted;
      await new Promise((resolve) => client!.once('open', resolve));
      await fn(serverSide, client);
    } finally {
      client?.terminate();
      for (const socket of server.clients) socket.terminate();
      await new Promise((resolve) => server.close(resolve));
    }
  }

  /** The messages `client` receives, resolved once there are `count`. */
  function messages(client: WebSocket, count: number): Promise<string[]> {
    const received: string[] = [];
    return new Promise((resolve) =>
      client.on('message', (data) => received.push(data.toString()) === count && resolve(received)),
    );
  }

  it('over a real ws socket: frames sent in one tick leave in two writes (the first at once) and arrive as separate messages, in order', () =>
    withSocketPair(async (serverSide, client) => {
      const stream = streamOf(serverSide)!;
      // Count the calls reaching libuv: one per write syscall (writev for several chunks).
      const calls: number[] = [];
      const socketStream = stream as unknown as Record<'_writev' | '_write', (...args: unknown[]) => unknown>;
      for (const method of ['_writev', '_write'] as const) {
        const original = socketStream[method].bind(stream);
        socketStream[method] = (...args: unknown[]) => {
          calls.push(method === '_writev' ? (args[0] as unknown[]).length : 1);
          return original(...args);
        };
      }
      const frames = ['["message",{"topic":"t"},1]', '["message",{"topic":"t"},2]', '["message",{"topic":"t"},3]'];
      const received = messages(client, frames.length);
      const sut = new TickWrites();
      let lastTick = NO_TICK;
      for (const frame of frames) {
        lastTick = sut.beforeFrame(stream, lastTick);
        serverSide.send(frame);
      }
      // The first frame was written at once (ws writes a header and a payload: a writev of 2).
      expect(calls).toEqual([2]);
      expect(await received).toEqual(frames);
      // Then one writev of the two other frames' headers and payloads.
      expect(calls).toEqual([2, 4]);
    }));

  it('a Connection is no slow consumer for the frames it holds in a tick while the kernel takes them (SPEC §9)', () =>
    withSocketPair(async (serverSide, client) => {
      const slow: Connection[] = [];
      const sut = new Connection('c', HANDLER, serverSide, 64 * 1024, (connection) => slow.push(connection));
      sut.state = 'ready';
      // 100 KiB in one tick: beyond the 64 KiB limit if held, far below what loopback's kernel buffers take.
      const frames = Array.from({ length: 10 }, (_, i) => `${i}`.padEnd(10 * 1024, '.'));
      const received = messages(client, frames.length);
      for (const frame of frames) expect(sut.send(frame)).toBe(true);
      expect(slow).toEqual([]);
      expect(await received).toEqual(frames);
    }));
});
