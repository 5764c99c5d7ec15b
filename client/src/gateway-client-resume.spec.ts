import type { ClientOptions, Disconnect, Resumed } from './client-options';
import { GatewayClient } from './gateway-client';
import { rejection, ScriptedSocket } from './testing/scripted-socket';

/**
 * SPEC §12.7 in the client: resume offers, positions, dropped duplicates,
 * the `resumed` and `reconnected` events, and the close codes of §12, with a
 * scripted socket and jest's fake clock (Date included).
 * (Against the real gateway: test/e2e/client-sdk-resume.e2e-spec.ts.)
 */
const LATTICE = ['v1.gateway-lattice+json', 'v1.swindon-lattice+json'];
const session = (token: string, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  resume: { token, window: 30 },
  ...extra,
});

describe(`${GatewayClient.name}: resumable sessions`, () => {
  let sut: GatewayClient;
  let got: unknown[];
  let events: Array<['resumed', Resumed] | ['reconnected']>;
  let disconnects: Disconnect[];

  function start(options: ClientOptions = {}): ScriptedSocket {
    sut = new GatewayClient('ws://gateway/?user=alice', { WebSocket: ScriptedSocket, random: () => 0.5, ...options });
    got = [];
    events = [];
    disconnects = [];
    sut.onMessage('a', (data) => got.push(data));
    sut.on('resumed', (info) => events.push(['resumed', info]));
    sut.on('reconnected', () => events.push(['reconnected']));
    sut.on('disconnect', (info) => disconnects.push(info));
    sut.connect().catch(() => undefined);
    return ScriptedSocket.latest();
  }

  /** Lose the current connection without a close frame and open the next attempt. */
  function drop(socket: ScriptedSocket): ScriptedSocket {
    socket.serverClose(1006);
    jest.advanceTimersByTime(disconnects[disconnects.length - 1].retryInMs!);
    return ScriptedSocket.latest();
  }

  beforeEach(() => {
    jest.useFakeTimers();
    ScriptedSocket.all = [];
  });

  afterEach(() => {
    sut.close();
    jest.useRealTimers();
  });

  it('resumes within the window with the latest token and the positions received: resumed, not reconnected', () => {
    const first = start();
    expect(first.protocols).toEqual([...LATTICE, 'gateway-resume']);
    first.hello('alice', session('T1'));
    first.message('a', 1, 'one');
    first.receive(['message', { topic: 'b', offset: 7, epoch: 'E2' }, 'b7']);
    first.receive(['lattice', { namespace: 'rooms' }, { lobby: { last_message_counter: 2 } }]);
    const second = drop(first);
    expect(second.protocols.slice(0, 2)).toEqual(LATTICE);
    expect(second.offer()).toEqual({ token: 'T1', count_replayed: true, positions: { b: [7, 'E2'], a: [1, 'E1'] } });
    second.hello('alice', session('T2', { resumed: true, lost: [], replayed: 1 }));
    second.message('a', 2, 'two');
    expect(events).toEqual([['resumed', { lost: [], replayed: 1 }]]);
    expect(got).toEqual(['one', 'two']);
    expect(sut.lattice('rooms').counter('lobby', 'last_message_counter')).toBe(2); // mirrors kept
    expect(drop(second).offer()).toEqual({
      token: 'T2',
      count_replayed: true,
      positions: { a: [2, 'E1'], b: [7, 'E2'] },
    });
  });

  it('says which topics were lost and how many messages are replayed, before any replayed message', () => {
    const first = start();
    first.hello('alice', session('T1'));
    first.message('a', 1, 'one');
    const second = drop(first);
    const order: unknown[] = [];
    sut.on('resumed', (info) => order.push(info));
    sut.onMessage('b', (data) => order.push(data));
    second.hello('alice', session('T2', { resumed: true, lost: ['a', 'c.d'], replayed: 1 }));
    second.receive(['message', { topic: 'b', offset: 4, epoch: 'E1' }, 'b4']);
    expect(order).toEqual([{ lost: ['a', 'c.d'], replayed: 1 }, 'b4']);
  });

  it('a gateway that does not say how many are replayed: replayed null', () => {
    const second = drop(start());
    second.hello('alice', session('T2', { resumed: true, lost: [] }));
    expect(events).toEqual([['resumed', { lost: [], replayed: null }]]);
  });

  it('after the window offers the bare opt-in: the new session says reconnected and starts with no positions', () => {
    const first = start({ connectTimeoutMs: 60_000 });
    first.hello('alice', session('T1'));
    first.message('a', 5, 'five');
    first.serverClose(1006);
    jest.advanceTimersByTime(29_999);
    expect(ScriptedSocket.latest().offer()).toMatchObject({ token: 'T1' }); // the retry within the window
    ScriptedSocket.latest().serverClose(1006); // a failed attempt; the window still runs from the first loss
    jest.advanceTimersByTime(1000);
    const late = ScriptedSocket.latest();
    expect(late.protocols).toEqual([...LATTICE, 'gateway-resume']);
    late.hello('alice', session('T3'));
    late.message('a', 5, 'five again'); // not a duplicate: positions belong to the session
    expect(events).toEqual([['reconnected']]);
    expect(got).toEqual(['five', 'five again']);
  });

  it('a failed resume (resumed: false) is a new session: reconnected, positions forgotten', () => {
    const first = start();
    first.hello('alice', session('T1'));
    first.message('a', 3, 'three');
    const second = drop(first);
    second.hello('alice', session('T2', { resumed: false }));
    expect(events).toEqual([['reconnected']]);
    expect(drop(second).offer()).toEqual({ token: 'T2', count_replayed: true, positions: {} });
  });

  it('drops replayed messages already delivered; another epoch starts the topic afresh', () => {
    const socket = start();
    socket.hello('alice', session('T1'));
    for (const [offset, epoch] of [
      [1, 'E1'],
      [2, 'E1'],
      [2, 'E1'],
      [1, 'E1'],
      [3, 'E1'],
      [1, 'E9'],
      [2, 'E9'],
    ] as const) {
      socket.message('a', offset, `${epoch}:${offset}`, epoch);
    }
    expect(got).toEqual(['E1:1', 'E1:2', 'E1:3', 'E9:1', 'E9:2']);
  });

  it("advances a topic's position before its handler runs", () => {
    const first = start({ reconnect: false });
    first.hello('alice', session('T1'));
    let offered: unknown = null;
    sut.onMessage('a', () => {
      // The handler itself loses the connection and connects again: the offer already has this message.
      first.serverClose(1006);
      void sut.connect().catch(() => undefined);
      offered = ScriptedSocket.latest().offer();
    });
    first.message('a', 1, 'one');
    expect(offered).toEqual({ token: 'T1', count_replayed: true, positions: { a: [1, 'E1'] } });
  });

  it('a new connection replacing one mid-replay never delivers a message twice', () => {
    const first = start();
    first.hello('alice', session('T1'));
    first.message('a', 1, 1);
    first.message('a', 2, 2);
    const second = drop(first);
    second.hello('alice', session('T2', { resumed: true, lost: [] }));
    second.message('a', 3, 3);
    second.message('a', 4, 4);
    const third = drop(second); // mid-replay
    second.message('a', 5, 'late frame of a replaced socket');
    expect(third.offer()).toEqual({ token: 'T2', count_replayed: true, positions: { a: [4, 'E1'] } });
    third.hello('alice', session('T3', { resumed: true, lost: [] }));
    for (const n of [3, 4, 5, 6]) third.message('a', n, n); // a replay that overlaps what was delivered
    expect(got).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('delivers nothing after close(): not to the other handlers of the same message, not later frames', () => {
    const socket = start();
    socket.hello('alice', session('T1'));
    sut.onMessage('a', () => sut.close());
    sut.onMessage('a', (data) => got.push(['second handler', data]));
    socket.message('a', 1, 'one');
    socket.message('a', 2, 'two');
    expect(got).toEqual(['one']);
    expect([sut.status, socket.endedBy]).toEqual(['closed', 1000]);
  });

  it('emits no resumed event when a hello listener closed the client', () => {
    const first = start();
    first.hello('alice', session('T1'));
    const second = drop(first);
    sut.on('hello', () => sut.close());
    second.hello('alice', session('T2', { resumed: true, lost: [] }));
    expect(events).toEqual([]);
  });

  it('on 1012 reconnects after a jitter below 1 s, not a backoff, and the backoff of later failures starts over', () => {
    const socket = start({ backoff: { baseMs: 60_000, capMs: 600_000 } });
    socket.hello('alice', session('T1'));
    socket.serverClose(1012, 'service_restart');
    expect(disconnects).toEqual([{ code: 1012, reason: 'service_restart', fatal: null, retryInMs: 500 }]);
    jest.advanceTimersByTime(500);
    expect(ScriptedSocket.latest().offer()).toMatchObject({ token: 'T1' });
    ScriptedSocket.latest().serverClose(1006);
    expect(disconnects[1].retryInMs).toBe(30_000);
  });

  it.each([
    [4409, 'session_resumed'],
    [4403, 'disconnected'],
  ])(
    'stops on %i %s (no fatal_error): closed, no retry; connect() again starts a new session',
    async (code, reason) => {
      const socket = start();
      socket.hello('alice', session('T1'));
      const inFlight = sut.call('slow');
      socket.serverClose(code, reason);
      expect(disconnects).toEqual([{ code, reason, fatal: null, retryInMs: null }]);
      expect(sut.status).toBe('closed');
      expect(await rejection(inFlight)).toMatchObject({ kind: 'connection_lost', sent: true });
      jest.advanceTimersByTime(60_000);
      expect(ScriptedSocket.all).toHaveLength(1);
      void sut.connect().catch(() => undefined);
      expect(ScriptedSocket.latest().protocols).toEqual([...LATTICE, 'gateway-resume']);
    },
  );

  it('settles calls in flight on a drop and does not send them again on the resumed connection', async () => {
    const first = start();
    first.hello('alice', session('T1'));
    const inFlight = sut.call('chat.send', ['hi']);
    const second = drop(first);
    expect(await rejection(inFlight)).toMatchObject({ kind: 'connection_lost', sent: true });
    second.hello('alice', session('T2', { resumed: true, lost: [] }));
    second.receive(['result', { request_id: 1 }, 'late reply']); // dropped: the call has settled
    expect(second.sent).toEqual([]);
  });

  it('resume: false offers the lattice protocols alone, and every later hello is reconnected', () => {
    const first = start({ resume: false });
    expect(first.protocols).toEqual(LATTICE);
    first.hello('alice');
    first.receive(['message', { topic: 'a' }, 'legacy']);
    const second = drop(first);
    expect(second.protocols).toEqual(LATTICE);
    second.hello('alice');
    second.receive(['message', { topic: 'a' }, 'legacy']);
    expect(events).toEqual([['reconnected']]);
    expect(got).toEqual(['legacy', 'legacy']);
  });

  it('a gateway without resume (hello meta {}) gets the bare opt-in again, never an offer', () => {
    const first = start();
    first.hello('alice');
    first.message('a', 1, 'x');
    expect(drop(first).protocols).toEqual([...LATTICE, 'gateway-resume']);
  });
});
