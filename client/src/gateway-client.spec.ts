import { isCallError, type CallError } from './call-error';
import { ConnectionClosedError } from './closed-error';
import { FatalError } from './fatal-error';
import type { ClientOptions, ConnectionStatus, Disconnect } from './client-options';
import { GatewayClient } from './gateway-client';
import { rejection, ScriptedSocket } from './testing/scripted-socket';

/**
 * The client's frame handling and connection state machine, driven through
 * the injectable WebSocket with a scripted socket and jest's fake clock.
 * (The same behaviour against the real gateway: test/e2e/client-sdk.e2e-spec.ts.)
 */
describe(GatewayClient.name, () => {
  let sut: GatewayClient;
  let statuses: ConnectionStatus[];
  let disconnects: Disconnect[];

  function start(options: ClientOptions = {}): GatewayClient {
    sut = new GatewayClient('ws://gateway/?user=alice', { WebSocket: ScriptedSocket, random: () => 0.5, ...options });
    statuses = [];
    disconnects = [];
    sut.on('status', (status) => statuses.push(status));
    sut.on('disconnect', (info) => disconnects.push(info));
    return sut;
  }

  beforeEach(() => {
    jest.useFakeTimers();
    ScriptedSocket.all = [];
  });

  afterEach(() => {
    sut.close();
    jest.useRealTimers();
  });

  it('offers the gateway subprotocol first, the swindon one as fallback, then gateway-resume, and resolves connect() with hello', async () => {
    start();
    const connected = sut.connect();
    expect(ScriptedSocket.latest().protocols).toEqual([
      'v1.gateway-lattice+json',
      'v1.swindon-lattice+json',
      'gateway-resume',
    ]);
    ScriptedSocket.latest().hello();
    await expect(connected).resolves.toEqual({ user_id: 'alice' });
    expect(statuses).toEqual(['connecting', 'connected']);
    expect(sut.hello).toEqual({ user_id: 'alice' });
  });

  it.each([4401, 4403])('rejects connect() with a FatalError on %i and does not retry', async (code) => {
    start();
    const connected = sut.connect();
    ScriptedSocket.latest().receive([
      'fatal_error',
      { error_kind: 'http_error', http_error: code - 4000 },
      { error: 'no' },
    ]);
    ScriptedSocket.latest().serverClose(code, 'backend_error');
    const error = await rejection(connected);
    expect(error).toBeInstanceOf(FatalError);
    expect(error).toMatchObject({ code, errorKind: 'http_error', status: code - 4000, data: { error: 'no' } });
    jest.advanceTimersByTime(60_000);
    expect(ScriptedSocket.all).toHaveLength(1);
    expect(sut.status).toBe('closed');
    expect(disconnects).toEqual([{ code, reason: 'backend_error', fatal: error, retryInMs: null }]);
  });

  it('retries after 4401 when the app asks: retryFatal, or connect() again', async () => {
    start({ retryFatal: () => true });
    sut.connect().catch(() => undefined);
    ScriptedSocket.latest().receive(['fatal_error', { error_kind: 'http_error', http_error: 401 }, null]);
    ScriptedSocket.latest().serverClose(4401);
    expect(disconnects[0].retryInMs).toBe(500);
    jest.advanceTimersByTime(500);
    expect(ScriptedSocket.all).toHaveLength(2);

    sut.close();
    start();
    const first = sut.connect();
    ScriptedSocket.latest().receive(['fatal_error', { error_kind: 'http_error', http_error: 401 }, null]);
    ScriptedSocket.latest().serverClose(4401);
    await rejection(first);
    const second = sut.connect();
    expect(sut.status).toBe('connecting');
    ScriptedSocket.latest().hello();
    await expect(second).resolves.toEqual({ user_id: 'alice' });
  });

  it('retries a 4500 with full-jitter backoff, growing until a hello resets it', async () => {
    start();
    const connected = sut.connect();
    for (let i = 0; i < 3; i++) {
      ScriptedSocket.latest().receive(['fatal_error', { error_kind: 'http_error', http_error: 500 }, null]);
      ScriptedSocket.latest().serverClose(4500);
      jest.advanceTimersByTime(disconnects[i].retryInMs!);
    }
    expect(disconnects.map((d) => d.retryInMs)).toEqual([500, 1000, 2000]);
    expect(disconnects[0].fatal).toMatchObject({ code: 4500, status: 500 });
    ScriptedSocket.latest().hello();
    await connected;
    ScriptedSocket.latest().serverClose(1006);
    expect(disconnects[3].retryInMs).toBe(500);
    expect(statuses).toEqual(['connecting', 'connected', 'reconnecting']);
  });

  it('answers calls by request id with results and typed errors', async () => {
    start();
    sut.connect().catch(() => undefined);
    ScriptedSocket.latest().hello();
    const ok = sut.call('chat.send', ['lobby', 'hi'], { x: 1 }, { active: 30 });
    const failed = sut.call('chat.nope');
    const socket = ScriptedSocket.latest();
    expect(socket.sent).toEqual([
      ['chat.send', { request_id: 1, active: 30 }, ['lobby', 'hi'], { x: 1 }],
      ['chat.nope', { request_id: 2 }, [], {}],
    ]);
    socket.receive([
      'error',
      { request_id: 2, error_kind: 'http_error', http_error: 404 },
      { error: 'no such method' },
    ]);
    socket.receive(['result', { request_id: 1 }, { sent: 1 }]);
    await expect(ok).resolves.toEqual({ sent: 1 });
    const error = (await rejection(failed)) as CallError;
    expect(isCallError(error)).toBe(true);
    expect(error).toMatchObject({
      kind: 'http_error',
      status: 404,
      body: { error: 'no such method' },
      method: 'chat.nope',
    });
  });

  it('queues calls made before hello, sends them in order after it, and times out one that waits too long', async () => {
    start();
    sut.connect().catch(() => undefined);
    const early = sut.call('a');
    const impatient = sut.call('b', [], {}, { timeoutMs: 100 });
    expect(ScriptedSocket.latest().sent).toEqual([]);
    jest.advanceTimersByTime(100);
    expect(await rejection(impatient)).toMatchObject({ kind: 'timeout', timeoutMs: 100 });
    ScriptedSocket.latest().hello();
    expect(ScriptedSocket.latest().sent).toEqual([['a', { request_id: 1 }, [], {}]]);
    ScriptedSocket.latest().receive(['result', { request_id: 1 }, 'A']);
    await expect(early).resolves.toBe('A');
  });

  it('rejects an aborted call at once and drops its late reply', async () => {
    start();
    sut.connect().catch(() => undefined);
    ScriptedSocket.latest().hello();
    const controller = new AbortController();
    const call = sut.call('slow', [], {}, { signal: controller.signal });
    controller.abort('user left');
    expect(await rejection(call)).toMatchObject({ kind: 'aborted', reason: 'user left' });
    ScriptedSocket.latest().receive(['result', { request_id: 1 }, 'late']);
    expect(await rejection(sut.call('x', [], {}, { signal: controller.signal }))).toMatchObject({ kind: 'aborted' });
  });

  it('loses sent calls on a disconnect, keeps queued ones through failed attempts, and says reconnected', async () => {
    start();
    sut.connect().catch(() => undefined);
    ScriptedSocket.latest().hello();
    const reconnected: unknown[] = [];
    sut.on('reconnected', (hello) => reconnected.push(hello));
    const inFlight = sut.call('a');
    ScriptedSocket.latest().serverClose(1001, 'going away');
    expect(await rejection(inFlight)).toMatchObject({ kind: 'connection_lost', sent: true, fatal: null });
    const waiting = sut.call('b', [], {}, { timeoutMs: 60_000 });
    jest.advanceTimersByTime(500);
    ScriptedSocket.latest().serverClose(1006); // a failed attempt
    jest.advanceTimersByTime(1000);
    expect(ScriptedSocket.all).toHaveLength(3);
    ScriptedSocket.latest().hello();
    expect(ScriptedSocket.latest().sent).toEqual([['b', { request_id: 2 }, [], {}]]);
    ScriptedSocket.latest().receive(['result', { request_id: 2 }, 'B']);
    await expect(waiting).resolves.toBe('B');
    expect(reconnected).toEqual([{ user_id: 'alice' }]);
    expect(statuses).toEqual(['connecting', 'connected', 'reconnecting', 'connected']);
  });

  it('settles every call on a fatal_error that stops it, and on close()', async () => {
    start();
    sut.connect().catch(() => undefined);
    ScriptedSocket.latest().hello();
    const sent = sut.call('a');
    ScriptedSocket.latest().receive(['fatal_error', { error_kind: 'http_error', http_error: 403 }, null]);
    ScriptedSocket.latest().serverClose(4403);
    expect(await rejection(sent)).toMatchObject({ kind: 'connection_lost', sent: true, fatal: { code: 4403 } });
    expect(await rejection(sut.call('later'))).toMatchObject({
      kind: 'connection_lost',
      sent: false,
      fatal: { code: 4403 },
    });

    start();
    const connecting = sut.connect();
    const queued = sut.call('q');
    sut.close();
    expect(await rejection(queued)).toMatchObject({ kind: 'connection_lost', sent: false, fatal: null });
    expect(await rejection(connecting)).toEqual(new ConnectionClosedError(1000, 'closed by the client'));
    expect(ScriptedSocket.latest().endedBy).toBe(1000); // a close frame: the gateway sees a clean close
  });

  it('gives up an attempt that gets no hello within the connect timeout', () => {
    start({ connectTimeoutMs: 2000 });
    sut.connect().catch(() => undefined);
    jest.advanceTimersByTime(1999);
    expect(disconnects).toEqual([]);
    jest.advanceTimersByTime(1);
    expect(ScriptedSocket.all[0].endedBy).toBe('terminate');
    expect(disconnects).toEqual([{ code: 1006, reason: 'connect timeout', fatal: null, retryInMs: 500 }]);
    jest.advanceTimersByTime(500);
    expect(ScriptedSocket.all).toHaveLength(2);
  });

  it('probes a silent connection each interval and reconnects after 3 silent intervals', () => {
    start({ pingIntervalMs: 1000 });
    sut.connect().catch(() => undefined);
    const socket = ScriptedSocket.latest();
    socket.hello();
    jest.advanceTimersByTime(1000);
    expect(socket.sent).toEqual([['gateway.probe', { request_id: 'probe-1' }, [], {}]]);
    socket.receive(['error', { request_id: 'probe-1', error_kind: 'validation_error' }, 'invalid method']);
    jest.advanceTimersByTime(2500);
    expect(disconnects).toEqual([]);
    jest.advanceTimersByTime(1000);
    expect(disconnects).toEqual([
      { code: 1006, reason: 'no traffic for 3 ping intervals', fatal: null, retryInMs: 500 },
    ]);
    expect(socket.endedBy).toBe('terminate');
  });

  it('counts pings as traffic where the WebSocket shows them (ws in Node)', () => {
    start({ pingIntervalMs: 1000, probe: false });
    sut.connect().catch(() => undefined);
    const socket = ScriptedSocket.latest();
    socket.hello();
    for (let i = 0; i < 10; i++) {
      jest.advanceTimersByTime(1000);
      socket.ping();
    }
    expect([socket.sent, disconnects]).toEqual([[], []]);
  });

  it('delivers messages by dotted topic until unsubscribed, and fills mirrors from the first frame', () => {
    start();
    sut.connect().catch(() => undefined);
    const socket = ScriptedSocket.latest();
    const got: unknown[] = [];
    const unsubscribe = sut.onMessage('rooms.lobby', (data, topic) => got.push([topic, data]));
    socket.hello();
    socket.receive(['message', { topic: 'rooms.lobby' }, { text: 'hi' }]);
    socket.receive(['message', { topic: 'rooms.other' }, { text: 'no' }]);
    unsubscribe();
    socket.receive(['message', { topic: 'rooms.lobby' }, { text: 'gone' }]);
    socket.receive(['lattice', { namespace: 'rooms' }, { lobby: { last_message_counter: 2 } }]);
    socket.receive(['lattice', { namespace: 'gateway.user' }, { bob: { status_register: [5, 'active'] } }]);
    expect(got).toEqual([['rooms.lobby', { text: 'hi' }]]);
    expect(sut.lattice('rooms').counter('lobby', 'last_message_counter')).toBe(2);
    expect(sut.users().status('bob')).toBe('active');
  });
});
