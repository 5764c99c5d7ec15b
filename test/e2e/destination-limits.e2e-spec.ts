import { Reply } from './harness/fake-upstream';
import { TestGateway, startTestGateway } from './harness/gateway';
import { untilMetric } from './harness/metrics';
import { deferred, waitFor, within } from './harness/wait';
import { Frame, WsClient } from './harness/ws-client';

const AUTH_PATH = '/gateway/authorize_connection';

type AuthBody = [{ connection_id: string }, unknown[], { url_querystring: string }];

const TOO_MANY = (meta: Record<string, unknown>): Frame => [
  'error',
  { ...meta, error_kind: 'internal_error' },
  'too_many_requests',
];
const TIMED_OUT = (meta: Record<string, unknown>): Frame => [
  'error',
  { ...meta, error_kind: 'http_error', http_error: 500 },
  null,
];

/** Paths the fake upstream received, authorization requests left out. */
function callPaths(t: TestGateway): string[] {
  return t.upstream.requests.map((r) => r.path).filter((p) => !p.endsWith(AUTH_PATH));
}

/** Assert SPEC §3's failure: fatal_error with status and data, then close 4000+status, backend_error. */
async function expectAuthFailure(client: WsClient, status: number, data: unknown): Promise<void> {
  expect(await client.next()).toEqual(['fatal_error', { error_kind: 'http_error', http_error: status }, data]);
  expect(await client.closed()).toEqual({ code: 4000 + status, reason: 'backend_error' });
  expect(client.frames).toHaveLength(1);
}

/** The gateway's log lines, parsed. */
function parsedLogs(t: TestGateway): Array<Record<string, unknown>> {
  return t.logs.map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** The "authorization failed" log line of connection `cid`, within `ms`. */
function authFailureLog(t: TestGateway, cid: string, ms = 2000): Promise<Record<string, unknown>> {
  return waitFor(
    () => parsedLogs(t).find((entry) => entry.msg === 'authorization failed' && entry.connection_id === cid),
    `an "authorization failed" log line for ${cid} (lines so far: ${t.logs.length})`,
    ms,
  );
}

/**
 * Routes for the "env values are defaults" rows: `own.*` (and the auth request) go to
 * destinations with `settings` of their own, everything else to `bare`, which has none.
 */
function ownAndBare(settings: string): (url: string) => string {
  return (url) => `
destinations:
  auth: { url: "${url}", ${settings} }
  own:  { url: "${url}", ${settings} }
  bare: { url: "${url}" }
handlers:
  h:
    path: /h
    message_handlers:
      "*": bare/
      "gateway.*": auth/
      "own.*": own/o
`;
}

describe('destination limits (SPEC §1)', () => {
  let t: TestGateway;
  /** Release functions of every held route; afterEach frees what a failing test left held. */
  let releases: Array<() => void>;
  beforeEach(() => (releases = []));
  afterEach(async () => {
    for (const release of releases) release();
    await t.close();
  });

  /** Script `key` to hold its answer until the returned function is called. */
  function hold(key: string, reply: Reply = { json: 'done' }): () => void {
    const gate = deferred();
    releases.push(() => gate.resolve());
    t.upstream.on(key, async () => {
      await gate.promise;
      return reply;
    });
    return () => gate.resolve();
  }

  describe('per-destination values in the configuration file win over the env (UPSTREAM_TIMEOUT=30s)', () => {
    let client: WsClient;
    beforeEach(async () => {
      t = await startTestGateway(
        { UPSTREAM_TIMEOUT: '30s' },
        (url) => `
destinations:
  auth:  { url: "${url}" }
  quick: { url: "${url}", timeout: 200ms }
  tight: { url: "${url}", max_sockets: 1, queue_limit: 0 }
  plain: { url: "${url}" }
handlers:
  h:
    path: /h
    message_handlers:
      "*": plain/
      "gateway.*": auth/
      "quick.*": quick/q
      "tight.*": tight/t
`,
      );
      ({ client } = await t.hello({ path: '/h' }));
    });

    it("times a call out after its destination's own timeout: http_error 500, socket kept", async () => {
      t.upstream.on('POST /hang', 'hang');
      t.upstream.on('POST /q/quick/hang', 'hang');
      client.send(['hang', { request_id: 1 }, [], {}]); // plain: UPSTREAM_TIMEOUT=30s
      await t.upstream.requestTo('/hang');
      client.send(['quick.hang', { request_id: 2 }, [], {}]); // quick: its own 200ms
      expect(await client.next(1500)).toEqual(TIMED_OUT({ request_id: 2 }));
      // Barrier: the plain call, issued first, has not timed out with quick's 200 ms.
      expect(await client.call('after', { request_id: 3 })).toEqual([
        'result',
        { request_id: 3 },
        { args: [], kwargs: {} },
      ]);
      expect(await client.call('quick.after', { request_id: 4 })).toEqual([
        'result',
        { request_id: 4 },
        { args: [], kwargs: {} },
      ]);
      expect(callPaths(t)).toEqual(['/hang', '/q/quick/hang', '/after', '/q/quick/after']);
    });

    it("refuses a call beyond its destination's own max_sockets and queue_limit; other destinations are unaffected", async () => {
      const releaseTight = hold('POST /t/tight/held', { json: 'tight' });
      const releasePlain = hold('POST /held', { json: 'plain' });
      client.send(['tight.held', { request_id: 1 }, [], {}]); // holds tight's only socket
      await t.upstream.requestTo('/t/tight/held');
      client.send(['tight.held', { request_id: 2, x: 'y' }, [], {}]); // no queue: refused
      expect(await client.next()).toEqual(TOO_MANY({ request_id: 2, x: 'y' }));
      // plain keeps the env defaults (100 sockets): a held call does not block the next one.
      client.send(['held', { request_id: 3 }, [], {}]);
      await t.upstream.requestTo('/held');
      expect(await client.call('free', { request_id: 4 })).toEqual([
        'result',
        { request_id: 4 },
        { args: [], kwargs: {} },
      ]);
      releaseTight();
      expect(await client.next()).toEqual(['result', { request_id: 1 }, 'tight']);
      releasePlain();
      expect(await client.next()).toEqual(['result', { request_id: 3 }, 'plain']);
      expect(callPaths(t)).toEqual(['/t/tight/held', '/held', '/free']);
    });
  });

  describe('env UPSTREAM_TIMEOUT=200ms is the default of destinations without their own timeout', () => {
    let client: WsClient;
    beforeEach(async () => {
      t = await startTestGateway({ UPSTREAM_TIMEOUT: '200ms' }, ownAndBare('timeout: 30s'));
      ({ client } = await t.hello({ path: '/h' }));
    });

    it('times a call to a destination without a timeout out after UPSTREAM_TIMEOUT, and not one that sets its own', async () => {
      t.upstream.on('POST /o/own/hang', 'hang');
      t.upstream.on('POST /hang', 'hang');
      client.send(['own.hang', { request_id: 1 }, [], {}]); // own: 30s
      await t.upstream.requestTo('/o/own/hang');
      client.send(['hang', { request_id: 2 }, [], {}]); // bare: the env's 200ms
      expect(await client.next(1500)).toEqual(TIMED_OUT({ request_id: 2 }));
      // Barrier: own.hang, issued first, has not timed out with the env's 200 ms.
      expect(await client.call('own.after', { request_id: 3 })).toEqual([
        'result',
        { request_id: 3 },
        { args: [], kwargs: {} },
      ]);
      expect(callPaths(t)).toEqual(['/o/own/hang', '/hang', '/o/own/after']);
    });
  });

  describe('env UPSTREAM_MAX_SOCKETS=1 and UPSTREAM_QUEUE_LIMIT=0 are the defaults of destinations without their own values', () => {
    let client: WsClient;
    beforeEach(async () => {
      t = await startTestGateway(
        { UPSTREAM_MAX_SOCKETS: '1', UPSTREAM_QUEUE_LIMIT: '0' },
        ownAndBare('max_sockets: 10, queue_limit: 10'),
      );
      ({ client } = await t.hello({ path: '/h' }));
    });

    it('refuses a second concurrent call to a destination without its own values, and not to one with them', async () => {
      const releaseBare = hold('POST /held', { json: 'bare' });
      const releaseOwn = hold('POST /o/own/held', { json: 'own' });
      client.send(['held', { request_id: 1 }, [], {}]); // holds bare's only socket
      await t.upstream.requestTo('/held');
      client.send(['held', { request_id: 2 }, [], {}]);
      expect(await client.next()).toEqual(TOO_MANY({ request_id: 2 }));
      // own sets max_sockets 10: two concurrent calls both reach the upstream.
      client.send(['own.held', { request_id: 3 }, [], {}]);
      client.send(['own.held', { request_id: 4 }, [], {}]);
      await t.upstream.requestTo('/o/own/held');
      await t.upstream.requestTo('/o/own/held');
      releaseBare();
      expect(await client.next()).toEqual(['result', { request_id: 1 }, 'bare']);
      releaseOwn();
      const ownReplies = [await client.next(), await client.next()].sort(
        (a, b) => Number(a[1].request_id) - Number(b[1].request_id),
      );
      expect(ownReplies).toEqual([
        ['result', { request_id: 3 }, 'own'],
        ['result', { request_id: 4 }, 'own'],
      ]);
      expect(callPaths(t)).toEqual(['/held', '/o/own/held', '/o/own/held']);
    });
  });

  describe('authorization, calls and inactivity notices share a destination (UPSTREAM_MAX_SOCKETS=1, UPSTREAM_QUEUE_LIMIT=0)', () => {
    beforeEach(async () => (t = await startTestGateway({ UPSTREAM_MAX_SOCKETS: '1', UPSTREAM_QUEUE_LIMIT: '0' })));

    it("refuses a new connection's authorization with 503 while a call holds the only socket", async () => {
      const { client } = await t.hello();
      const release = hold('POST /held');
      client.send(['held', { request_id: 1 }, [], {}]);
      await t.upstream.requestTo('/held');
      await expectAuthFailure(await t.connect({ query: 'user=refused' }), 503, null);
      release();
      expect(await client.next()).toEqual(['result', { request_id: 1 }, 'done']);
      // The slot came back: a new connection is authorized again.
      const { hello } = await t.hello({ query: 'user=later' });
      expect(hello).toEqual(['hello', {}, { user_id: 'later' }]);
    });

    it('refuses a call with too_many_requests while an authorization holds the only socket', async () => {
      const gate = deferred();
      releases.push(() => gate.resolve());
      t.upstream.on(`POST ${AUTH_PATH}`, async (req) => {
        const query = (req.body as AuthBody)[2].url_querystring;
        if (query === 'user=held') await gate.promise;
        return { json: { user_id: query === 'user=held' ? 'held' : 'u1' } };
      });
      const { client } = await t.hello();
      const pending = await t.connect({ query: 'user=held' });
      await t.connectionIdOf('user=held');
      expect(await client.call('x', { request_id: 1 })).toEqual(TOO_MANY({ request_id: 1 }));
      gate.resolve();
      expect(await pending.next()).toEqual(['hello', {}, { user_id: 'held' }]);
      expect(await client.call('x', { request_id: 2 })).toEqual([
        'result',
        { request_id: 2 },
        { args: [], kwargs: {} },
      ]);
      expect(callPaths(t)).toEqual(['/x']);
    });
  });

  describe('a burst of authorizations (UPSTREAM_MAX_SOCKETS=100, the default)', () => {
    beforeEach(async () => (t = await startTestGateway()));

    /** `count` connects whose authorizations are all held at the upstream at once, then answered. */
    async function burst(round: number, count: number): Promise<void> {
      const gate = deferred();
      releases.push(() => gate.resolve());
      const allHeld = deferred();
      let held = 0;
      t.upstream.on(`POST ${AUTH_PATH}`, async () => {
        if (++held === count) allHeld.resolve();
        await gate.promise;
        return { json: { user_id: `b${round}` } };
      });
      const hellos = Array.from({ length: count }, (_, i) => t.hello({ query: `user=b${round}x${i}` }));
      await within(allHeld.promise, `${count} authorizations held at once`);
      gate.resolve();
      await Promise.all(hellos);
    }

    it("keeps the burst's upstream connections open for the next burst: keep-alive connections up to the bound (SPEC §1)", async () => {
      await burst(1, 16);
      await burst(2, 16);
      expect(t.upstream.connectionsAccepted).toBe(16);
    });
  });

  describe('an inactivity notice shares the destination (UPSTREAM_MAX_SOCKETS=1, UPSTREAM_QUEUE_LIMIT=0, NEW_CONNECTION_IDLE_TIMEOUT=200ms)', () => {
    beforeEach(
      async () =>
        (t = await startTestGateway({
          UPSTREAM_MAX_SOCKETS: '1',
          UPSTREAM_QUEUE_LIMIT: '0',
          NEW_CONNECTION_IDLE_TIMEOUT: '200ms',
        })),
    );

    it('refuses a call with too_many_requests while an inactivity notice holds the only socket', async () => {
      const release = hold('POST /gateway/session_inactive', { status: 204 });
      const { client } = await t.hello();
      await t.upstream.requestTo('/gateway/session_inactive', 3000);
      expect(await client.call('x', { request_id: 1 })).toEqual(TOO_MANY({ request_id: 1 }));
      release();
      // The notice's slot comes back once its answer is recorded; a call then goes through.
      await untilMetric(
        t.apiUrl,
        'gateway_upstream_requests_total{destination="default",kind="inactive",outcome="http_204"}',
        (n) => n === 1,
      );
      expect(await client.call('x', { request_id: 2 })).toEqual([
        'result',
        { request_id: 2 },
        { args: [], kwargs: {} },
      ]);
      expect(callPaths(t)).toEqual(['/gateway/session_inactive', '/x']);
    });
  });

  describe('with MAX_PAYLOAD_BYTES=1KiB', () => {
    beforeEach(async () => (t = await startTestGateway({ MAX_PAYLOAD_BYTES: '1KiB' })));

    it('refuses an authorization body over MAX_PAYLOAD_BYTES (under 8 KiB): 500 and null, close 4500, logged', async () => {
      t.upstream.on(`POST ${AUTH_PATH}`, (req) => {
        const big = (req.body as AuthBody)[2].url_querystring === 'big';
        return { json: { user_id: 'u1', pad: (big ? 'P' : 'p').repeat(big ? 2000 : 500) } };
      });
      const { hello } = await t.hello();
      expect(hello).toEqual(['hello', {}, { user_id: 'u1', pad: 'p'.repeat(500) }]);
      const client = await t.connect({ query: 'big' });
      const cid = await t.connectionIdOf('big');
      await expectAuthFailure(client, 500, null);
      expect(await authFailureLog(t, cid)).toMatchObject({ reason: expect.any(String) });
    });
  });

  describe('authorization failures are logged with the reason, never the body (SPEC §3, §10)', () => {
    beforeEach(async () => (t = await startTestGateway()));

    it.each<[string, (marker: string) => Reply, RegExp]>([
      [
        'an object over 8 KiB',
        (marker) => ({ json: { user_id: 'u1', pad: marker.repeat(Math.ceil(8200 / marker.length)) } }),
        /8192|8 ?KiB|over|large/i,
      ],
      ['a body that is not JSON', (marker) => ({ text: `user u1 ${marker}` }), /json/i],
    ])('logs %s', async (_what, reply, reason) => {
      const marker = 'SECRET_AUTH_BODY_MARKER';
      t.upstream.on(`POST ${AUTH_PATH}`, reply(marker));
      const client = await t.connect({ query: 'who=me' });
      const cid = await t.connectionIdOf('who=me');
      await expectAuthFailure(client, 500, null);
      const line = await authFailureLog(t, cid);
      expect(line).toMatchObject({ level: 'warn', reason: expect.stringMatching(reason) });
      expect(t.logs.filter((l) => l.includes(marker))).toEqual([]);
    });
  });
});
