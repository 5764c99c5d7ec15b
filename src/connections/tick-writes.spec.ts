import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { WebSocket, WebSocketServer } from 'ws';
import { TickWrites, streamOf } from './tick-writes';

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

/** Resolves once the ticks scheduled so far (the uncork included) have run. */
const tickEnd = (): Promise<void> => new Promise((resolve) => process.nextTick(resolve));

describe('TickWrites (issue 33: coalesced writes)', () => {
  const cases: { name: string; ticks: string[][][]; writes: string[][][] }[] = [
    { name: 'one frame in a tick: one write', ticks: [[['a']]], writes: [[['a']]] },
    { name: 'three frames in a tick: one write of the three', ticks: [[['a', 'b', 'c']]], writes: [[['a', 'b', 'c']]] },
    { name: 'a frame per tick: a write per tick', ticks: [[['a']], [['b']]], writes: [[['a'], ['b']]] },
    {
      name: 'two streams in a tick: one write each, none mixed',
      ticks: [
        [
          ['a1', 'a2'],
          ['b1', 'b2', 'b3'],
        ],
      ],
      writes: [[['a1', 'a2']], [['b1', 'b2', 'b3']]],
    },
  ];

  it.each(cases)('$name', async ({ ticks, writes }) => {
    const sut = new TickWrites();
    const streams = writes.map(() => new RecordingStream());
    for (const tick of ticks) {
      const before = streams.map((s) => s.writes.length);
      tick.forEach((frames, i) => {
        for (const frame of frames) {
          sut.hold(streams[i]);
          streams[i].write(frame);
        }
      });
      // Nothing leaves before the tick ends.
      expect(streams.map((s) => s.writes.length)).toEqual(before);
      await tickEnd();
    }
    expect(streams.map((s) => s.writes)).toEqual(writes);
  });

  it('holds nothing back past the end of the tick it was asked in', () => {
    const sut = new TickWrites();
    const stream = new RecordingStream();
    sut.hold(stream);
    stream.write('a');
    expect(stream.writes).toEqual([]);
    return tickEnd().then(() => expect(stream.writes).toEqual([['a']]));
  });

  it('writeNow writes what is held at once and holds what follows until the tick ends', async () => {
    const sut = new TickWrites();
    const stream = new RecordingStream();
    for (const frame of ['a', 'b']) {
      sut.hold(stream);
      stream.write(frame);
    }
    sut.writeNow(stream);
    expect(stream.writes).toEqual([['a', 'b']]);
    sut.hold(stream);
    stream.write('c');
    expect(stream.writes).toEqual([['a', 'b']]);
    await tickEnd();
    expect(stream.writes).toEqual([['a', 'b'], ['c']]);
  });

  it('over a real ws socket: frames sent in one tick leave in one writev and arrive as separate messages, in order', async () => {
    const server = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    let client: WebSocket | null = null;
    try {
      await new Promise((resolve) => server.once('listening', resolve));
      const { port } = server.address() as AddressInfo;
      const accepted = new Promise<WebSocket>((resolve) => server.once('connection', resolve));
      client = new WebSocket(`ws://127.0.0.1:${port}`);
      const serverSide = await accepted;
      await new Promise((resolve) => client!.once('open', resolve));
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
      const received: string[] = [];
      const all = new Promise<void>((resolve) =>
        client!.on('message', (data) => received.push(data.toString()) === frames.length && resolve()),
      );
      const sut = new TickWrites();
      for (const frame of frames) {
        sut.hold(stream);
        serverSide.send(frame);
      }
      expect(calls).toEqual([]);
      await all;
      // One writev of the three frames' headers and payloads.
      expect(calls).toEqual([2 * frames.length]);
      expect(received).toEqual(frames);
    } finally {
      client?.terminate();
      for (const socket of server.clients) socket.terminate();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
