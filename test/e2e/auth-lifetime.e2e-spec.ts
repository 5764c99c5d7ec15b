import { RecordedRequest, Reply } from './harness/fake-upstream';
import { TestGateway, startTestGateway } from './harness/gateway';
import { scrapeMetrics, untilMetric } from './harness/metrics';
import { dropConnection, optInProtocols, resumeOf, resumeProtocols } from './harness/resume';
import { WsClient } from './harness/ws-client';
import {
  AUTH_PATH,
  REFRESH_PATH,
  authorize,
  identityHeader,
  inactiveNoticeOf,
  refreshOf,
  userOf,
} from './harness/auth-lifetime';

/** Assert SPEC §14's end: fatal_error with S and D, then close 4000+S with reason `expired`. */
async function expectExpired(client: WsClient, status: number, data: unknown, ms = 2000): Promise<void> {
  expect(await client.next(ms)).toEqual(['fatal_error', { error_kind: 'http_error', http_error: status }, data]);
  expect(await client.closed()).toEqual({ code: 4000 + status, reason: 'expired' });
}

/** A call's upstream request, answered: proves every frame sent before its result has arrived. */
async function callThrough(t: TestGateway, client: WsClient, user: string): Promise<RecordedRequest> {
  const result = await client.call('chat.barrier', { request_id: user });
  expect(result[0]).toBe('result');
  return t.upstream.nextRequest((r) => r.path === '/chat/barrier' && r.body !== undefined && userOf(r) === user);
}

async function refreshes(t: TestGateway, result: string): Promise<number> {
  return (await scrapeMetrics(t.apiUrl)).value(`gateway_auth_refreshes_total{result="${result}"}`);
}

describe('authorization lifetime and refresh (SPEC §14)', () => {
  let t: TestGateway;
  /** Per user: how the refresh route answers (default: the same object, no header). */
  const refreshReplies = new Map<string, (req: RecordedRequest) => Reply>();

  beforeAll(async () => {
    t = await startTestGateway({ AUTHORIZATION_GRACE: '2s', UPSTREAM_TIMEOUT: '400ms' });
    t.upstream.on(`POST ${AUTH_PATH}`, authorize);
    t.upstream.on(`POST ${REFRESH_PATH}`, (req) => {
      const user = userOf(req);
      return refreshReplies.get(user)?.(req) ?? { json: { user_id: user }, headers: { 'Gateway-Auth-TTL': '1' } };
    });
  });
  afterAll(() => t.close());

  describe('Gateway-Auth-TTL on the authorization answer', () => {
    it.each(['0', '31536001', '1.5', '-1', 'soon', '60s'])(
      'makes the answer invalid when it is %j (S=500, logged with the cause)',
      async (ttl) => {
        const client = await t.connect({ query: `user=bad-ttl&ttl=${encodeURIComponent(ttl)}` });
        expect(await client.next()).toEqual(['fatal_error', { error_kind: 'http_error', http_error: 500 }, null]);
        expect(await client.closed()).toEqual({ code: 4500, reason: 'backend_error' });
        const failure = t.logs
          .map((line) => JSON.parse(line) as Record<string, unknown>)
          .filter((entry) => entry.msg === 'authorization failed')
          .pop();
        expect(failure).toMatchObject({
          reason: 'Gateway-Auth-TTL is not a whole number of seconds from 1 to 31536000',
        });
      },
    );
  });

  describe('the refresh request', () => {
    it('goes at 90% ±5% of the lifetime, with the identity header and [{connection_id}, [], {}]', async () => {
      const startedAt = Date.now();
      const plain = await t.helloAs('plain-user');
      const { cid } = await t.helloAs('timed', 'user=timed&ttl=1');
      const refresh = await t.upstream.nextRequest(refreshOf('timed'), 3000);
      const elapsed = Date.now() - startedAt;
      expect(elapsed).toBeGreaterThanOrEqual(850);
      expect(elapsed).toBeLessThan(1500);
      expect(refresh.method).toBe('POST');
      expect(refresh.body).toEqual([{ connection_id: cid }, [], {}]);
      expect(refresh.headers.authorization).toBe(identityHeader('{"user_id":"timed"}'));
      expect(refresh.headers['content-type']).toBe('application/json');
      // SPEC §14: a connection without a lifetime is never refreshed (the legacy path is unchanged).
      expect(t.upstream.requests.filter((r) => r.path === REFRESH_PATH && userOf(r) === 'plain-user')).toEqual([]);
      await callThrough(t, plain.client, 'plain-user');
    });
  });

  describe('answers', () => {
    it('200 with the same object: no frame, and the lifetime starts again (its own Gateway-Auth-TTL)', async () => {
      const okBefore = await refreshes(t, 'ok');
      const { client } = await t.hello({ query: 'user=same&ttl=1', protocols: optInProtocols() });
      const first = await t.upstream.nextRequest(refreshOf('same'), 3000);
      const answeredAt = Date.now();
      const second = await t.upstream.nextRequest(refreshOf('same'), 3000);
      expect(Date.now() - answeredAt).toBeGreaterThanOrEqual(800);
      expect(second.headers.authorization).toBe(first.headers.authorization);
      await callThrough(t, client, 'same');
      expect(client.frames.map((frame) => frame[0])).toEqual(['hello', 'result']);
      expect(await refreshes(t, 'ok')).toBeGreaterThanOrEqual(okBefore + 2);
    });

    it('200 with a changed object: a resumable client gets hello {refreshed}, later requests carry it', async () => {
      const changed = { user_id: 'changes', role: 'admin' };
      refreshReplies.set('changes', () => ({ json: changed, headers: { 'Gateway-Auth-TTL': '3600' } }));
      const { client } = await t.hello({ query: 'user=changes&ttl=1', protocols: optInProtocols() });
      expect(await client.next(3000)).toEqual(['hello', { refreshed: true }, changed]);
      const call = await callThrough(t, client, 'changes');
      expect(call.headers.authorization).toBe(identityHeader(JSON.stringify(changed)));
      expect(await refreshes(t, 'changed')).toBeGreaterThanOrEqual(1);
    });

    it('200 with a changed object: a legacy client gets no extra frame, later requests carry it', async () => {
      const changed = { user_id: 'changes-legacy', plan: 'pro' };
      refreshReplies.set('changes-legacy', () => ({ json: changed, headers: { 'Gateway-Auth-TTL': '3600' } }));
      const { client } = await t.hello({ query: 'user=changes-legacy&ttl=1' });
      const changedBefore = await refreshes(t, 'changed');
      await untilMetric(t.apiUrl, 'gateway_auth_refreshes_total{result="changed"}', (n) => n > changedBefore, 3000);
      const call = await callThrough(t, client, 'changes-legacy');
      expect(call.headers.authorization).toBe(identityHeader(JSON.stringify(changed)));
      expect(client.frames.filter((frame) => frame[0] !== 'result')).toEqual([
        ['hello', {}, { user_id: 'changes-legacy' }],
      ]);
    });

    it.each([401, 403, 404, 410])(
      '%d: fatal_error and close 4000+S "expired"; the session cannot be resumed',
      async (status) => {
        const user = `refused-${status}`;
        refreshReplies.set(user, () => ({ status, json: { reason: 'disabled' } }));
        const refusedBefore = await refreshes(t, 'refused');
        const { client, hello } = await t.hello({ query: `user=${user}&ttl=1`, protocols: optInProtocols() });
        await expectExpired(client, status, { reason: 'disabled' }, 3000);
        expect(await refreshes(t, 'refused')).toBe(refusedBefore + 1);
        const again = await t.hello({ query: `user=${user}`, protocols: resumeProtocols(resumeOf(hello).token) });
        expect(again.hello[1]).toMatchObject({ resumed: false });
      },
    );

    it('a valid object for another user: fatal_error 403 and close 4403 "expired"', async () => {
      refreshReplies.set('swapped', () => ({ json: { user_id: 'someone-else' } }));
      const { client } = await t.hello({ query: 'user=swapped&ttl=1' });
      await expectExpired(client, 403, null, 3000);
    });

    it('other answers (5xx, not JSON, too deep) are retried (first within 500 ms, then doubling) until lifetime + grace, then 4500', async () => {
      const attemptsAt: number[] = [];
      // A 502, then a body that is not JSON, then an object nested deeper than §4.1 allows: each one retried.
      const deep = '{"user_id":"failing","x":' + '['.repeat(200) + ']'.repeat(200) + '}';
      const replies: Reply[] = [{ status: 502, json: {} }, { text: '{"user_id":' }, { text: deep }];
      refreshReplies.set('failing', () => {
        attemptsAt.push(Date.now());
        return replies[attemptsAt.length - 1] ?? { status: 502, json: {} };
      });
      const failedBefore = await refreshes(t, 'failed');
      const startedAt = Date.now();
      const { client } = await t.hello({ query: 'user=failing&ttl=1' });
      await expectExpired(client, 500, null, 5000);
      const closedAfter = Date.now() - startedAt;
      // Lifetime 1 s + AUTHORIZATION_GRACE 2 s.
      expect(closedAfter).toBeGreaterThanOrEqual(2900);
      expect(closedAfter).toBeLessThan(4000);
      // Attempts at ~0.9 s, then 500 ms later, then 1 s later; the next (2 s later) would be past the grace.
      expect(attemptsAt).toHaveLength(3);
      const [first, second, third] = attemptsAt;
      expect(second - first).toBeGreaterThanOrEqual(450);
      expect(second - first).toBeLessThan(700);
      expect(third - second).toBeGreaterThanOrEqual(950);
      expect(third - second).toBeLessThan(1300);
      expect(await refreshes(t, 'failed')).toBe(failedBefore + 3);
    });

    it('a refresh the backend does not answer holds at most the request timeout, then is retried', async () => {
      refreshReplies.set('hanging', () => 'hang');
      const { client } = await t.hello({ query: 'user=hanging&ttl=1' });
      await t.upstream.nextRequest(refreshOf('hanging'), 3000);
      const firstAt = Date.now();
      await t.upstream.nextRequest(refreshOf('hanging'), 2000);
      // UPSTREAM_TIMEOUT 400 ms, then the first retry within 500 ms.
      expect(Date.now() - firstAt).toBeLessThan(1200);
      await expectExpired(client, 500, null, 4000);
    });
  });

  describe('resumed sessions', () => {
    it('a detached session is not refreshed; resumed after its lifetime, it is refreshed before the resumed hello', async () => {
      const { client, hello } = await t.hello({ query: 'user=sleeper&ttl=1', protocols: optInProtocols() });
      const cid = await t.connectionIdOf('user=sleeper&ttl=1');
      await dropConnection(client);
      // Barrier: a connection authorized after the drop with a 2 s lifetime is refreshed after 1.7 s at the
      // earliest, so by then the detached session's refresh time and lifetime have both passed.
      await t.hello({ query: 'user=sleeper-barrier&ttl=2' });
      await t.upstream.nextRequest(refreshOf('sleeper-barrier'), 3000);
      expect(t.upstream.requests.filter(refreshOf('sleeper'))).toEqual([]);
      // The refresh answers 300 ms late: the resumed hello waits for it.
      refreshReplies.set('sleeper', () => ({
        json: { user_id: 'sleeper' },
        headers: { 'Gateway-Auth-TTL': '1' },
        delayMs: 300,
      }));
      const resuming = await t.connect({ query: 'user=sleeper', protocols: resumeProtocols(resumeOf(hello).token) });
      const refresh = await t.upstream.nextRequest(refreshOf('sleeper'), 2000);
      const refreshedAt = Date.now();
      expect(refresh.body).toEqual([{ connection_id: cid }, [], {}]);
      const resumed = await resuming.next();
      expect(Date.now() - refreshedAt).toBeGreaterThanOrEqual(250);
      expect(resumed).toEqual(['hello', expect.objectContaining({ resumed: true }), { user_id: 'sleeper' }]);
      // The refresh went before the hello, and the resume sent no authorization request.
      expect(t.upstream.requests.filter((r) => r.path === AUTH_PATH && r.rawBody.includes('user=sleeper"'))).toEqual(
        [],
      );
    });

    it('a refused refresh at resume makes it a normal connect (new authorization with its cookie, new id)', async () => {
      refreshReplies.set('sleeper-refused', () => ({ status: 403, json: {} }));
      const { client, hello } = await t.hello({ query: 'user=sleeper-refused&ttl=1', protocols: optInProtocols() });
      const cid = await t.connectionIdOf('user=sleeper-refused&ttl=1');
      await dropConnection(client);
      await t.hello({ query: 'user=refused-barrier&ttl=2' });
      await t.upstream.nextRequest(refreshOf('refused-barrier'), 3000);
      const token = resumeOf(hello).token;
      const again = await t.hello({
        query: 'user=sleeper-refused&again=1',
        protocols: resumeProtocols(token),
        headers: { Cookie: 'sid=new' },
      });
      expect(again.hello[1]).toMatchObject({ resumed: false });
      const auth = await t.upstream.nextRequest(
        (r) => r.path === AUTH_PATH && r.rawBody.includes('user=sleeper-refused&again=1'),
      );
      const [meta, , kwargs] = auth.body as [{ connection_id: string }, unknown, { http_cookie: string }];
      expect(kwargs.http_cookie).toBe('sid=new');
      expect(meta.connection_id).not.toBe(cid);
      // The session ended: its token resumes nothing any more.
      const late = await t.hello({ query: 'user=sleeper-refused&late=1', protocols: resumeProtocols(token) });
      expect(late.hello[1]).toMatchObject({ resumed: false });
    });

    it('a resume never extends a lifetime: the refresh stays at its time', async () => {
      const startedAt = Date.now();
      const { client, hello } = await t.hello({ query: 'user=hopper&ttl=1', protocols: optInProtocols() });
      await dropConnection(client);
      const resumed = await t.hello({ query: 'user=hopper', protocols: resumeProtocols(resumeOf(hello).token) });
      expect(resumed.hello[1]).toMatchObject({ resumed: true });
      await t.upstream.nextRequest(refreshOf('hopper'), 2000);
      expect(Date.now() - startedAt).toBeLessThan(1200);
    });
  });
});

describe('the inactivity notice after a refresh that changed the object (SPEC §8, §14)', () => {
  let t: TestGateway;
  afterEach(() => t.close());

  /** A gateway whose refresh answers `changed` for its user and the same object for anyone else. */
  async function start(windowText: string, changed: { user_id: string }): Promise<void> {
    t = await startTestGateway({ NEW_CONNECTION_IDLE_TIMEOUT: windowText });
    t.upstream.on(`POST ${AUTH_PATH}`, authorize);
    t.upstream.on(`POST ${REFRESH_PATH}`, (req) => ({
      json: userOf(req) === changed.user_id ? changed : { user_id: userOf(req) },
      headers: { 'Gateway-Auth-TTL': '3600' },
    }));
  }

  it('carries the new identity after a refresh of a live connection', async () => {
    const changed = { user_id: 'renewed', plan: 'pro' };
    await start('2s', changed);
    const { client } = await t.hello({ query: 'user=renewed&ttl=1', protocols: optInProtocols() });
    // Refreshed at about 0.9 s, inactive at 2 s.
    expect(await client.next(1500)).toEqual(['hello', { refreshed: true }, changed]);
    const notice = await t.upstream.nextRequest(inactiveNoticeOf('renewed'), 2500);
    expect(notice.headers.authorization).toBe(identityHeader(JSON.stringify(changed)));
  });

  it('carries the new identity after a refresh at resume', async () => {
    const changed = { user_id: 'waking', plan: 'pro' };
    await start('4s', changed);
    const { client, hello } = await t.hello({ query: 'user=waking&ttl=1', protocols: optInProtocols() });
    await dropConnection(client);
    // Barrier: a 2 s lifetime that began after the drop is refreshed once the detached one's (1 s) has ended.
    await t.hello({ query: 'user=waking-barrier&ttl=2' });
    await t.upstream.nextRequest(refreshOf('waking-barrier'), 3000);
    const resumed = await t.hello({ query: 'user=waking', protocols: resumeProtocols(resumeOf(hello).token) });
    expect(resumed.hello).toEqual(['hello', expect.objectContaining({ resumed: true }), changed]);
    // Inactive 4 s after the first authorization (a resume is not activity).
    const notice = await t.upstream.nextRequest(inactiveNoticeOf('waking'), 3500);
    expect(notice.headers.authorization).toBe(identityHeader(JSON.stringify(changed)));
  });
});

describe('lifetime settings (SPEC §14)', () => {
  let t: TestGateway;
  afterEach(() => t.close());

  it('AUTHORIZATION_TTL sets the lifetime of an answer without Gateway-Auth-TTL', async () => {
    t = await startTestGateway({ AUTHORIZATION_TTL: '1s' });
    await t.hello({ query: 'user=default-ttl' });
    await t.upstream.requestTo(REFRESH_PATH, 2000);
  });

  it('AUTHORIZATION_MAX_TTL caps the header', async () => {
    t = await startTestGateway({ AUTHORIZATION_MAX_TTL: '1s' });
    t.upstream.on(`POST ${AUTH_PATH}`, { json: { user_id: 'capped' }, headers: { 'Gateway-Auth-TTL': '3600' } });
    await t.hello();
    await t.upstream.requestTo(REFRESH_PATH, 2000);
  });

  it('a flood of calls cannot take the first lane from a refresh (SPEC §1)', async () => {
    t = await startTestGateway({ UPSTREAM_MAX_SOCKETS: '2', UPSTREAM_TIMEOUT: '10s' });
    t.upstream.on(`POST ${AUTH_PATH}`, authorize);
    t.upstream.on('POST /slow/hang', 'hang');
    const { client: flooder } = await t.hello({ query: 'user=flooder' });
    await t.hello({ query: 'user=refreshed-anyway&ttl=1' });
    for (let i = 0; i < 50; i++) flooder.send(['slow.hang', { request_id: i }, [], {}]);
    await t.upstream.nextRequest((r) => r.path === '/slow/hang');
    await t.upstream.nextRequest(refreshOf('refreshed-anyway'), 2000);
  });

  it('routes the refresh as gateway.refresh_connection (SPEC §1)', async () => {
    t = await startTestGateway(
      { AUTHORIZATION_TTL: '1s' },
      (url) => `
destinations:
  main: { url: "${url}" }
handlers:
  chat:
    path: /
    message_handlers:
      "*": main/
      "gateway.refresh_connection": main/auth
`,
    );
    await t.hello();
    await t.upstream.requestTo('/auth' + REFRESH_PATH, 2000);
  });
});
