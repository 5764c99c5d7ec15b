import type { ClientOptions, Disconnect } from './client-options';
import { FatalError } from './fatal-error';
import type { Hello } from './frames';
import { GatewayClient } from './gateway-client';
import { ScriptedSocket } from './testing/scripted-socket';

/**
 * SPEC §14 in the client: the `refreshed` event, and a close with reason
 * `expired` that ends the session: one normal connect, never a loop.
 * (Against the real gateway: test/e2e/client-sdk-lifetime.e2e-spec.ts.)
 */
const session = (token: string): Record<string, unknown> => ({ resume: { token, window: 30 } });
const EXPIRED_401: [string, Record<string, unknown>, unknown] = [
  'fatal_error',
  { error_kind: 'http_error', http_error: 401 },
  { reason: 'disabled' },
];

describe(`${GatewayClient.name}: authorization lifetime`, () => {
  let sut: GatewayClient;
  let refreshed: Hello[];
  let hellos: Hello[];
  let disconnects: Disconnect[];

  function start(options: ClientOptions = {}): ScriptedSocket {
    sut = new GatewayClient('ws://gateway/?user=alice', { WebSocket: ScriptedSocket, random: () => 0.5, ...options });
    refreshed = [];
    hellos = [];
    disconnects = [];
    sut.on('refreshed', (hello) => refreshed.push(hello));
    sut.on('hello', (hello) => hellos.push(hello));
    sut.on('disconnect', (info) => disconnects.push(info));
    sut.connect().catch(() => undefined);
    return ScriptedSocket.latest();
  }

  /** The gateway ends the connection: fatal_error, then close 4000+S `expired`. */
  function expire(socket: ScriptedSocket, frame = EXPIRED_401): void {
    socket.receive(frame);
    socket.serverClose(4000 + ((frame[1].http_error as number | undefined) ?? 500), 'expired');
  }

  beforeEach(() => {
    jest.useFakeTimers();
    ScriptedSocket.all = [];
  });

  afterEach(() => {
    sut.close();
    jest.useRealTimers();
  });

  it('emits refreshed with the new identity, which becomes the hello; the session and its token stay', () => {
    const socket = start();
    socket.hello('alice', session('T1'));
    socket.receive(['hello', { refreshed: true }, { user_id: 'alice', role: 'admin' }]);
    expect(refreshed).toEqual([{ user_id: 'alice', role: 'admin' }]);
    expect(sut.hello).toEqual({ user_id: 'alice', role: 'admin' });
    expect(hellos).toEqual([{ user_id: 'alice' }]);
    socket.serverClose(1006);
    jest.advanceTimersByTime(disconnects[0].retryInMs!);
    expect(ScriptedSocket.latest().offer()).toMatchObject({ token: 'T1' });
  });

  it('ignores a refreshed hello for another user', () => {
    const socket = start();
    socket.hello('alice', session('T1'));
    socket.receive(['hello', { refreshed: true }, { user_id: 'mallory' }]);
    expect(refreshed).toEqual([]);
    expect(sut.hello).toEqual({ user_id: 'alice' });
  });

  it('on close "expired" reconnects at once without a resume offer, whatever retryFatal says', () => {
    const first = start({ retryFatal: () => false });
    first.hello('alice', session('T1'));
    expire(first);
    expect(disconnects).toEqual([
      {
        code: 4401,
        reason: 'expired',
        fatal: new FatalError(4401, 'http_error', 401, { reason: 'disabled' }),
        retryInMs: 0,
      },
    ]);
    jest.advanceTimersByTime(0);
    const second = ScriptedSocket.latest();
    expect(second).not.toBe(first);
    expect(second.offer()).toBeNull();
    expect(second.protocols).toContain('gateway-resume');
    second.hello('alice', session('T2'));
    expect(sut.status).toBe('connected');
  });

  it('stops when the connect that follows an expiry is refused: never a loop', async () => {
    const first = start({ retryFatal: () => true });
    first.hello('alice', session('T1'));
    const closed = sut.connect();
    expire(first);
    jest.advanceTimersByTime(0);
    const second = ScriptedSocket.latest();
    second.receive(['fatal_error', { error_kind: 'http_error', http_error: 500 }, null]);
    second.serverClose(4500, 'backend_error');
    jest.advanceTimersByTime(60_000);
    expect(ScriptedSocket.all).toHaveLength(2);
    expect(sut.status).toBe('closed');
    expect(disconnects[1]).toMatchObject({ code: 4500, retryInMs: null });
    void closed;
  });

  it('after a new hello, a later expiry again gets its one reconnect', () => {
    const first = start();
    first.hello('alice', session('T1'));
    expire(first);
    jest.advanceTimersByTime(0);
    const second = ScriptedSocket.latest();
    second.hello('alice', session('T2'));
    expire(second, ['fatal_error', { error_kind: 'http_error', http_error: 500 }, null]);
    jest.advanceTimersByTime(0);
    const third = ScriptedSocket.latest();
    expect(third).not.toBe(second);
    expect(third.offer()).toBeNull();
  });
});
