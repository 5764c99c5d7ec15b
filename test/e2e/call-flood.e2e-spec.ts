import { TestGateway, startTestGateway } from './harness/gateway';
import { untilMetric } from './harness/metrics';
import { deferred, waitFor, within } from './harness/wait';
import { Frame, WsClient } from './harness/ws-client';

const AUTH_PATH = '/gateway/authorize_connection';
const TOO_MANY = (meta: Record<string, unknown>): Frame => [
  'error',
  { ...meta, error_kind: 'internal_error' },
  'too_many_requests',
];

/** Frames of `client` after its hello. */
function replies(client: WsClient): Frame[] {
  return client.frames.filter((f) => f[0] !== 'hello');
}

/** Frames of `client` that are too_many_requests errors. */
function refusals(client: WsClient): Frame[] {
  return client.frames.filter((f) => f[0] === 'error' && f[2] === 'too_many_requests');
}

/**
 * Abuse resistance (issue 22; SPEC §1 CLIENT_MAX_PENDING_CALLS and the
 * destination's two lanes): one connection flooding a slow method can neither
 * hold more than its share nor delay anybody's login.
 */
describe('a flood of calls from one connection (SPEC §1)', () => {
  let t: TestGateway;
  let releaseSlow: () => void;

  beforeEach(() => {
    const gate = deferred();
    releaseSlow = () => gate.resolve();
  });
  afterEach(async () => {
    releaseSlow();
    await t.close();
  });

  /** Script `POST /slow` to hold every answer until `releaseSlow()`. */
  function holdSlow(): void {
    const gate = deferred();
    releaseSlow = () => gate.resolve();
    t.upstream.on('POST /slow', async () => {
      await gate.promise;
      return { json: 'slow done' };
    });
  }

  describe('with the defaults (CLIENT_MAX_PENDING_CALLS=100, UPSTREAM_QUEUE_LIMIT=100000) and UPSTREAM_MAX_SOCKETS=10', () => {
    beforeEach(async () => (t = await startTestGateway({ UPSTREAM_MAX_SOCKETS: '10', LOG_LEVEL: 'info' })));

    it('answers calls beyond 100 pending with too_many_requests at once, sends them nowhere, and a new user still logs in within 2 s', async () => {
      holdSlow();
      const { client: flooder } = await t.helloAs('flooder');
      const FLOOD = 3000;
      const frames = Array.from({ length: FLOOD }, (_, i) => JSON.stringify(['slow', { request_id: i }, [], {}]));
      for (const frame of frames) flooder.send(frame);
      // The 2,900 calls beyond the first 100 are answered at once, while all 100 are still held upstream.
      await waitFor(
        () => (refusals(flooder).length === FLOOD - 100 ? true : undefined),
        `${FLOOD - 100} too_many_requests (got ${refusals(flooder).length})`,
        5000,
      );
      expect(refusals(flooder).map((f) => f[1].request_id)).toEqual(
        Array.from({ length: FLOOD - 100 }, (_, i) => i + 100),
      );
      expect(replies(flooder)).toHaveLength(FLOOD - 100);
      expect(refusals(flooder)[0]).toEqual(TOO_MANY({ request_id: 100 }));

      // Calls never hold the last tenth of the sockets: of their 9 places, 8 run and one waits in
      // the calls' agent for the next free socket (upstream.client.ts); 91 wait in the calls lane.
      await waitFor(
        () => (t.upstream.requests.filter((r) => r.path === '/slow').length === 8 ? true : undefined),
        '8 calls at the upstream',
      );
      const { client: newcomer, hello } = await within(
        t.hello({ query: 'user=newcomer' }),
        'hello of a new user during the flood',
        2000,
      );
      expect(hello).toEqual(['hello', {}, { user_id: 'newcomer' }]);
      // The newcomer's own calls wait their turn behind the flood's, but are not refused.
      newcomer.send(['fast', { request_id: 'n1' }, [], {}]);
      expect(t.upstream.requests.filter((r) => r.path === '/slow')).toHaveLength(8);
      await untilMetric(t.apiUrl, 'gateway_client_frames_total{outcome="too_many_requests"}', (n) => n === FLOOD - 100);

      releaseSlow();
      await waitFor(
        () => (replies(flooder).length === FLOOD ? true : undefined),
        `the 100 held calls answered (replies: ${replies(flooder).length})`,
        5000,
      );
      expect(flooder.frames.filter((f) => f[0] === 'result')).toHaveLength(100);
      expect(await newcomer.next()).toEqual(['result', { request_id: 'n1' }, { args: [], kwargs: {} }]);
      expect(t.upstream.requests.filter((r) => r.path === '/slow')).toHaveLength(100);
    });

    it('frees a pending place as each answer arrives: the connection may call again', async () => {
      holdSlow();
      const { client } = await t.helloAs('caller');
      for (let i = 0; i < 100; i++) client.send(['slow', { request_id: i }, [], {}]);
      expect(await client.call('slow', { request_id: 100 })).toEqual(TOO_MANY({ request_id: 100 }));
      releaseSlow();
      await waitFor(
        () => (replies(client).length === 101 ? true : undefined),
        `100 results (replies: ${replies(client).length})`,
        5000,
      );
      client.send(['other', { request_id: 101 }, [], {}]);
      await waitFor(
        () => (replies(client).length === 102 ? true : undefined),
        'the answer to a call after the 100 results',
      );
      expect(replies(client)[101]).toEqual(['result', { request_id: 101 }, { args: [], kwargs: {} }]);
    });

    it('counts per connection: another connection of the same user has its own 100', async () => {
      holdSlow();
      const { client: first } = await t.helloAs('same', 'user=same&c=1');
      const { client: second, cid: secondCid } = await t.helloAs('same', 'user=same&c=2');
      for (let i = 0; i < 100; i++) first.send(['slow', { request_id: i }, [], {}]);
      expect(await first.call('slow', { request_id: 100 })).toEqual(TOO_MANY({ request_id: 100 }));
      second.send(['slow', { request_id: 'mine' }, [], {}]);
      const isSecond = (body: unknown): boolean => (body as [{ connection_id: string }])[0].connection_id === secondCid;
      releaseSlow();
      await t.upstream.nextRequest((r) => r.path === '/slow' && isSecond(r.body), 5000);
      await waitFor(() => (replies(second).length === 1 ? true : undefined), "the second connection's answer", 5000);
      expect(replies(second)).toEqual([['result', { request_id: 'mine' }, 'slow done']]);
    });
  });

  describe('with CLIENT_MAX_PENDING_CALLS=1000, UPSTREAM_MAX_SOCKETS=2 and UPSTREAM_QUEUE_LIMIT=5', () => {
    beforeEach(
      async () =>
        (t = await startTestGateway({
          CLIENT_MAX_PENDING_CALLS: '1000',
          UPSTREAM_MAX_SOCKETS: '2',
          UPSTREAM_QUEUE_LIMIT: '5',
        })),
    );

    it('keeps a socket for authorization: calls hold 1 of 2, wait 5 deep, the rest are refused, and a login is served at once', async () => {
      holdSlow();
      const { client } = await t.helloAs('flooder');
      for (let i = 0; i < 20; i++) client.send(['slow', { request_id: i }, [], {}]);
      await waitFor(
        () => (refusals(client).length === 14 ? true : undefined),
        `14 too_many_requests (got ${refusals(client).length})`,
      );
      await t.upstream.requestTo('/slow');
      const { hello } = await within(t.hello({ query: 'user=other' }), 'a login while calls fill their lane', 2000);
      expect(hello).toEqual(['hello', {}, { user_id: 'other' }]);
      expect(t.upstream.requests.filter((r) => r.path === AUTH_PATH)).toHaveLength(2);
      expect(t.upstream.requests.filter((r) => r.path === '/slow')).toHaveLength(1);
      releaseSlow();
      await waitFor(
        () => (client.frames.filter((f) => f[0] === 'result').length === 6 ? true : undefined),
        '6 results',
      );
    });
  });
});
