import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Reply } from './harness/fake-upstream';
import { TestGateway, startTestGateway } from './harness/gateway';
import { freePort } from './harness/ports';
import { deferred } from './harness/wait';
import { identityHeader } from './harness/identity';
import { WsClient } from './harness/ws-client';

const AUTH_PATH = '/gateway/authorize_connection';
const VERSION = (JSON.parse(readFileSync(join(__dirname, '../../package.json'), 'utf8')) as { version: string })
  .version;
const CONNECTION_ID = /^[A-Za-z0-9_-]{1,64}$/;

type AuthBody = [
  { connection_id: string },
  unknown[],
  { http_cookie: string | null; http_authorization: string | null; url_querystring: string },
];

/** The connection id the gateway sent in the next authorization request. */
async function nextConnectionId(t: TestGateway): Promise<string> {
  return ((await t.upstream.requestTo(AUTH_PATH)).body as AuthBody)[0].connection_id;
}

/** Assert SPEC §3's failure: fatal_error with status and data, then close 4000+status, backend_error. */
async function expectAuthFailure(client: WsClient, status: number, data: unknown): Promise<void> {
  expect(await client.next()).toEqual(['fatal_error', { error_kind: 'http_error', http_error: status }, data]);
  expect(await client.closed()).toEqual({ code: 4000 + status, reason: 'backend_error' });
  expect(client.frames).toHaveLength(1);
}

describe('authorization (SPEC §3)', () => {
  let t: TestGateway;
  afterEach(() => t.close());

  describe('the request', () => {
    beforeEach(async () => (t = await startTestGateway()));

    it('posts the connection id, cookie, authorization and raw query string, without an Authorization header', async () => {
      const query = 'a=1&b=%20x+y&c=%E2%82%AC&user=u1';
      await t.hello({ query, headers: { Cookie: 'sid=abc; theme=dark', Authorization: 'Bearer tok' } });
      const auth = await t.upstream.requestTo(AUTH_PATH);
      expect(auth.method).toBe('POST');
      const body = auth.body as AuthBody;
      expect(body).toEqual([
        { connection_id: expect.stringMatching(CONNECTION_ID) },
        [],
        { http_cookie: 'sid=abc; theme=dark', http_authorization: 'Bearer tok', url_querystring: query },
      ]);
      expect(Object.keys(body[0])).toEqual(['connection_id']);
      expect(auth.headers.authorization).toBeUndefined();
      expect(auth.headers['user-agent']).toBe(`gateway/${VERSION}`);
      expect(auth.headers['content-type']).toBe('application/json');
      expect(auth.headers['x-request-id']).toBeUndefined();
    });

    it('sends null for absent headers and "" for an absent query string', async () => {
      await t.hello();
      const auth = await t.upstream.requestTo(AUTH_PATH);
      expect((auth.body as AuthBody)[2]).toEqual({ http_cookie: null, http_authorization: null, url_querystring: '' });
    });

    it('gives every connection its own id', async () => {
      await t.hello();
      await t.hello();
      const first = await nextConnectionId(t);
      const second = await nextConnectionId(t);
      expect(first).not.toBe(second);
    });

    it('says hello with the whole authorization object', async () => {
      const object = { user_id: 'u1:a/b_c-d', name: 'Ann', roles: ['admin'], nested: { n: 1, ok: true } };
      t.upstream.on(`POST ${AUTH_PATH}`, { json: object });
      const { hello } = await t.hello();
      expect(hello).toEqual(['hello', {}, object]);
    });

    it('accepts application/json with a utf-8 charset', async () => {
      t.upstream.on(`POST ${AUTH_PATH}`, {
        headers: { 'Content-Type': 'application/json; charset=utf-8' },
        json: { user_id: 'u1' },
      });
      const { hello } = await t.hello();
      expect(hello).toEqual(['hello', {}, { user_id: 'u1' }]);
    });

    it('accepts a user_id of 256 characters', async () => {
      const userId = 'a'.repeat(256);
      t.upstream.on(`POST ${AUTH_PATH}`, { json: { user_id: userId } });
      const { hello } = await t.hello();
      expect(hello).toEqual(['hello', {}, { user_id: userId }]);
    });

    it('sends the identity of the whole authorization object on later calls', async () => {
      t.upstream.on(`POST ${AUTH_PATH}`, { json: { user_id: 'u1', name: 'x' } });
      const { client } = await t.hello();
      await client.call('profile.get', { request_id: 1 });
      const call = await t.upstream.requestTo('/profile/get');
      expect(call.headers.authorization).toBe(identityHeader('{"user_id":"u1","name":"x"}'));
      expect(call.headers['user-agent']).toBe(`gateway/${VERSION}`);
      expect(call.headers['content-type']).toBe('application/json');
    });

    it('encodes the identity from compact JSON even when the backend sent it spaced out', async () => {
      t.upstream.on(`POST ${AUTH_PATH}`, { text: '{ "user_id" : "u1",\n  "tags": [ 1, 2 ] }' });
      const { client, hello } = await t.hello();
      expect(hello).toEqual(['hello', {}, { user_id: 'u1', tags: [1, 2] }]);
      await client.call('x', { request_id: 1 });
      expect((await t.upstream.requestTo('/x')).headers.authorization).toBe(
        identityHeader('{"user_id":"u1","tags":[1,2]}'),
      );
    });
  });

  describe('with REQUEST_ID_HEADER=X-Request-Id', () => {
    beforeEach(async () => (t = await startTestGateway({ REQUEST_ID_HEADER: 'X-Request-Id' })));

    it('sends <cid>-auth on the authorization and <cid>-<request_id> on calls with integer and string ids', async () => {
      const { client } = await t.hello();
      const auth = await t.upstream.requestTo(AUTH_PATH);
      const cid = (auth.body as AuthBody)[0].connection_id;
      expect(auth.headers['x-request-id']).toBe(`${cid}-auth`);
      expect(await client.call('a', { request_id: 7 })).toEqual([
        'result',
        { request_id: 7 },
        { args: [], kwargs: {} },
      ]);
      expect((await t.upstream.requestTo('/a')).headers['x-request-id']).toBe(`${cid}-7`);
      expect(await client.call('b', { request_id: 'abc_D-9' })).toEqual([
        'result',
        { request_id: 'abc_D-9' },
        { args: [], kwargs: {} },
      ]);
      expect((await t.upstream.requestTo('/b')).headers['x-request-id']).toBe(`${cid}-abc_D-9`);
    });
  });

  describe('failures', () => {
    beforeEach(async () => (t = await startTestGateway()));

    async function failWith(reply: Reply, status: number, data: unknown): Promise<void> {
      t.upstream.on(`POST ${AUTH_PATH}`, reply);
      await expectAuthFailure(await t.connect(), status, data);
    }

    it.each([400, 401, 403, 404, 410, 500, 503])('passes status %i on with its JSON body', async (status) => {
      await failWith({ status, json: { error: 'denied', status } }, status, { error: 'denied', status });
    });

    it.each([400, 401, 403, 404, 410, 500, 503])(
      'passes status %i on with null when its body is not JSON',
      async (status) => {
        await failWith({ status, headers: { 'Content-Type': 'text/plain' }, text: 'denied' }, status, null);
      },
    );

    it.each([400, 401, 403, 404, 410, 500, 503])(
      'passes status %i on with null when its JSON body does not parse',
      async (status) => {
        await failWith({ status, text: '{"error":' }, status, null);
      },
    );

    it.each([201, 204, 302, 405, 502])('collapses status %i to 500 with null', async (status) => {
      await failWith(
        { status, headers: status === 302 ? { Location: '/elsewhere' } : {}, json: { user_id: 'u1' } },
        500,
        null,
      );
    });

    it.each<[string, Reply]>([
      ['not JSON', { text: 'user u1' }],
      ['a JSON array', { json: [{ user_id: 'u1' }] }],
      ['a JSON string', { json: 'u1' }],
      ['a JSON number', { json: 1 }],
      ['JSON null', { json: null }],
      ['an empty body', { text: '' }],
      ['an empty object', { json: {} }],
      ['user_id null', { json: { user_id: null } }],
      ['user_id a number', { json: { user_id: 42 } }],
      ['user_id an empty string', { json: { user_id: '' } }],
      ['user_id with a space', { json: { user_id: 'a b' } }],
      ['user_id with a dot', { json: { user_id: 'a.b' } }],
      ['user_id with a non-ASCII letter', { json: { user_id: 'ü' } }],
      ['user_id of 257 characters', { json: { user_id: 'a'.repeat(257) } }],
      ['a trailing comma', { text: '{"user_id": "u1",}' }],
      ['Content-Type text/plain', { headers: { 'Content-Type': 'text/plain' }, json: { user_id: 'u1' } }],
      [
        'a latin-1 charset',
        { headers: { 'Content-Type': 'application/json; charset=iso-8859-1' }, json: { user_id: 'u1' } },
      ],
    ])('refuses a 200 answer with %s: 500 and null', async (_what, reply) => {
      await failWith(reply, 500, null);
    });

    it('refuses an authorization object over 8 KiB and accepts one of exactly 8 KiB', async () => {
      const pad = 8192 - JSON.stringify({ user_id: 'u1', pad: '' }).length;
      t.upstream.on(`POST ${AUTH_PATH}`, (req) =>
        (req.body as AuthBody)[2].url_querystring === 'big'
          ? { json: { user_id: 'u1', pad: 'x'.repeat(pad + 1) } }
          : { json: { user_id: 'u1', pad: 'x'.repeat(pad) } },
      );
      const { hello } = await t.hello();
      expect(JSON.stringify(hello[2])).toHaveLength(8192);
      await expectAuthFailure(await t.connect({ query: 'big' }), 500, null);
    });

    it('refuses the connection when the backend hangs up: 500', async () => {
      await failWith('destroy', 500, null);
    });
  });

  describe('with UPSTREAM_TIMEOUT=200ms', () => {
    beforeEach(async () => (t = await startTestGateway({ UPSTREAM_TIMEOUT: '200ms' })));

    it('refuses the connection when the backend does not answer in time: 500', async () => {
      t.upstream.on(`POST ${AUTH_PATH}`, 'hang');
      await expectAuthFailure(await t.connect(), 500, null);
    });
  });

  describe('with UPSTREAM_MAX_SOCKETS=1 and UPSTREAM_QUEUE_LIMIT=0', () => {
    beforeEach(async () => (t = await startTestGateway({ UPSTREAM_MAX_SOCKETS: '1', UPSTREAM_QUEUE_LIMIT: '0' })));

    it('refuses the connection with 503 when the destination queue is full', async () => {
      const release = deferred();
      t.upstream.on(`POST ${AUTH_PATH}`, async () => {
        await release.promise;
        return { json: { user_id: 'u1' } };
      });
      const first = await t.connect();
      await t.upstream.requestTo(AUTH_PATH);
      await expectAuthFailure(await t.connect(), 503, null);
      release.resolve();
      expect(await first.next()).toEqual(['hello', {}, { user_id: 'u1' }]);
    });
  });

  describe('with an upstream that refuses connections', () => {
    beforeEach(async () => (t = await startTestGateway({ UPSTREAM_URL: `http://127.0.0.1:${await freePort()}` })));

    it('refuses the connection: 500', async () => {
      await expectAuthFailure(await t.connect(), 500, null);
    });
  });

  describe('before hello, with CLIENT_QUEUE_MAX_BYTES=1KiB', () => {
    beforeEach(async () => (t = await startTestGateway({ CLIENT_QUEUE_MAX_BYTES: '1KiB' })));

    it('closes 1008 early_frames_over_limit when frames before hello exceed CLIENT_QUEUE_MAX_BYTES (below the 64 KiB budget)', async () => {
      t.upstream.on(`POST ${AUTH_PATH}`, 'hang');
      const client = await t.connect();
      await t.upstream.requestTo(AUTH_PATH);
      const frame = JSON.stringify(['x', { request_id: 1 }, ['p'.repeat(400)], {}]);
      client.send(frame); // ~430 bytes kept
      client.send(frame); // ~860
      await client.flush();
      expect(client.socket.readyState).toBe(client.socket.OPEN);
      client.send(frame); // over 1 KiB
      expect(await client.next()).toEqual([
        'fatal_error',
        { error_kind: 'validation_error' },
        'frames before hello exceed 1024 bytes',
      ]);
      expect(await client.closed()).toEqual({ code: 1008, reason: 'early_frames_over_limit' });
      expect(client.frames).toHaveLength(1);
      expect(t.upstream.requests.map((r) => r.path)).toEqual([AUTH_PATH]);
    });
  });

  describe('before hello (one upstream socket, so upstream order is send order)', () => {
    beforeEach(
      async () => (t = await startTestGateway({ UPSTREAM_MAX_SOCKETS: '1', NEW_CONNECTION_IDLE_TIMEOUT: '200ms' })),
    );

    it('processes frames received before hello in order right after it', async () => {
      const release = deferred();
      t.upstream.on(`POST ${AUTH_PATH}`, async () => {
        await release.promise;
        return { json: { user_id: 'u1' } };
      });
      const client = await t.connect();
      await t.upstream.requestTo(AUTH_PATH);
      client.send(['a..b', { request_id: 1 }, [], {}]);
      client.send(['first', { request_id: 2 }, [1], {}]);
      client.send(['second', { request_id: 3 }, [2], {}]);
      client.send(['', { request_id: 4 }, [], {}]);
      await client.flush(); // the gateway now holds all four frames
      release.resolve();
      expect(await client.next()).toEqual(['hello', {}, { user_id: 'u1' }]);
      expect(await client.next()).toEqual([
        'error',
        { request_id: 1, error_kind: 'validation_error' },
        'invalid method',
      ]);
      expect(await client.next()).toEqual([
        'error',
        { request_id: 4, error_kind: 'validation_error' },
        'invalid method',
      ]);
      expect(await client.next()).toEqual(['result', { request_id: 2 }, { args: [1], kwargs: {} }]);
      expect(await client.next()).toEqual(['result', { request_id: 3 }, { args: [2], kwargs: {} }]);
      expect(t.upstream.requests.map((r) => r.path)).toEqual([AUTH_PATH, '/first', '/second']);
    });

    it('drops frames received before a failed authorization: no upstream call', async () => {
      const release = deferred();
      t.upstream.on(`POST ${AUTH_PATH}`, async (req) => {
        if ((req.body as AuthBody)[2].url_querystring === 'user=barrier') return { json: { user_id: 'barrier' } };
        await release.promise;
        return { status: 403, json: { error: 'banned' } };
      });
      const client = await t.connect();
      await t.upstream.requestTo(AUTH_PATH);
      client.send(['early', { request_id: 1 }, [], {}]);
      await client.flush();
      release.resolve();
      await expectAuthFailure(client, 403, { error: 'banned' });
      const { client: barrier } = await t.hello({ query: 'user=barrier' });
      expect(await barrier.call('barrier', { request_id: 1 })).toEqual([
        'result',
        { request_id: 1 },
        { args: [], kwargs: {} },
      ]);
      expect(t.upstream.requests.map((r) => r.path)).toEqual([AUTH_PATH, AUTH_PATH, '/barrier']);
    });

    it('ignores an authorization answer that arrives after its client left: no session, no inactivity notice', async () => {
      const release = deferred();
      t.upstream.on(`POST ${AUTH_PATH}`, async (req) => {
        const user = new URLSearchParams((req.body as AuthBody)[2].url_querystring).get('user') ?? 'u1';
        if (user === 'ghost') await release.promise;
        return { json: { user_id: user } };
      });
      const ghost = await t.connect({ query: 'user=ghost' });
      await t.upstream.requestTo(AUTH_PATH);
      ghost.send(['early', { request_id: 1 }, [], {}]);
      await ghost.close();
      await t.untilOpenConnections(0);
      release.resolve();
      // The barrier's authorization waits for the ghost's answer (one socket), so the
      // ghost's answer is handled first; a ghost session would expire first too.
      await t.hello({ query: 'user=barrier' });
      const inactive = await t.upstream.requestTo('/gateway/session_inactive');
      expect(inactive.headers.authorization).toBe(identityHeader('{"user_id":"barrier"}'));
      expect(ghost.frames).toEqual([]);
      expect(t.upstream.requests.map((r) => r.path)).toEqual([AUTH_PATH, AUTH_PATH, '/gateway/session_inactive']);
    });
  });
});
