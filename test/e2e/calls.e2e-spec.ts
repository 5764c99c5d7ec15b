import { Reply } from './harness/fake-upstream';
import { TestGateway, startTestGateway } from './harness/gateway';
import { deferred } from './harness/wait';
import { WsClient } from './harness/ws-client';

const AUTH_PATH = '/gateway/authorize_connection';

type CallBody = [Record<string, unknown>, unknown[], Record<string, unknown>];

/** Paths the fake upstream received, authorization requests left out. */
function callPaths(t: TestGateway): string[] {
  return t.upstream.requests.map((r) => r.path).filter((p) => !p.endsWith(AUTH_PATH));
}

/** The message JSON.parse gives for `text` (the same engine runs the gateway). */
function parserMessage(text: string): string {
  try {
    JSON.parse(text);
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error(`${text} parses`);
}

describe('client calls (SPEC §4)', () => {
  let t: TestGateway;
  let client: WsClient;
  afterEach(() => t.close());

  describe('relaying', () => {
    beforeEach(async () => {
      t = await startTestGateway();
      ({ client } = await t.hello());
    });

    it('answers an echo call with the upstream body', async () => {
      t.upstream.on('POST /chat/echo', (req) => ({ json: { echoed: (req.body as CallBody)[1] } }));
      expect(await client.call('chat.echo', { request_id: 1 }, ['hi', 2])).toEqual([
        'result',
        { request_id: 1 },
        { echoed: ['hi', 2] },
      ]);
    });

    it('posts a.b.c to /a/b/c', async () => {
      await client.call('a.b.c', { request_id: 1 });
      const req = await t.upstream.requestTo('/a/b/c');
      expect(req.method).toBe('POST');
    });

    it('sends the meta with the connection id, args and kwargs unchanged', async () => {
      const cid = ((await t.upstream.requestTo(AUTH_PATH)).body as CallBody)[0].connection_id;
      const meta = { request_id: 5, connection_id: 'forged', active: 30, extra: { deep: [1, null, 'x'] } };
      const args = [1, 'two', { three: [3] }, null, true, 1.5];
      const kwargs = { k: 'v', nested: { a: [] }, unicode: 'é€😀' };
      expect(await client.call('rooms.join', meta, args, kwargs)).toEqual(['result', meta, { args, kwargs }]);
      const req = await t.upstream.requestTo('/rooms/join');
      expect(req.body).toEqual([{ ...meta, connection_id: cid }, args, kwargs]);
    });

    it('accepts a string request id', async () => {
      expect(await client.call('x', { request_id: 'a-Z_9' })).toEqual([
        'result',
        { request_id: 'a-Z_9' },
        { args: [], kwargs: {} },
      ]);
      expect(await client.call('x', { request_id: 'a'.repeat(36) })).toEqual([
        'result',
        { request_id: 'a'.repeat(36) },
        { args: [], kwargs: {} },
      ]);
    });

    it('accepts request id 0 and the largest safe integer', async () => {
      expect((await client.call('x', { request_id: 0 }))[0]).toBe('result');
      expect((await client.call('x', { request_id: Number.MAX_SAFE_INTEGER }))[0]).toBe('result');
    });
  });

  describe('call validation (one upstream socket, so upstream order is send order)', () => {
    beforeEach(async () => {
      t = await startTestGateway({ UPSTREAM_MAX_SOCKETS: '1' });
      ({ client } = await t.hello());
    });

    /** Barrier: a valid call after the rejected ones is the only call the upstream sees. */
    async function expectNoCallReachedTheUpstream(): Promise<void> {
      expect(await client.call('barrier', { request_id: 'barrier' })).toEqual([
        'result',
        { request_id: 'barrier' },
        { args: [], kwargs: {} },
      ]);
      expect(callPaths(t)).toEqual(['/barrier']);
    }

    it.each<[string, Record<string, unknown>]>([
      ['1.1', { request_id: 1.1 }],
      ['-1', { request_id: -1 }],
      ['2^53 (unsafe)', { request_id: 2 ** 53 }],
      ['"invalid rxid"', { request_id: 'invalid rxid' }],
      ['"!@#$"', { request_id: '!@#$' }],
      ['"" (empty)', { request_id: '' }],
      ['37 chars', { request_id: 'a'.repeat(37) }],
      ['{}', { request_id: {} }],
      ['null', { request_id: null }],
      ['[]', { request_id: [] }],
      ['true', { request_id: true }],
      ['missing', { other: 1 }],
    ])('rejects request id %s with a validation error and no upstream call', async (_what, meta) => {
      expect(await client.call('chat.echo', meta)).toEqual([
        'error',
        { ...meta, error_kind: 'validation_error' },
        'invalid request id',
      ]);
      await expectNoCallReachedTheUpstream();
    });

    it.each(['', 'a..b', 'gateway.x', 'gateway.authorize_connection', 'a b', '.a', 'a.', 'a/b', 'é'])(
      'rejects method %j with a validation error and no upstream call',
      async (method) => {
        expect(await client.call(method, { request_id: 1 })).toEqual([
          'error',
          { request_id: 1, error_kind: 'validation_error' },
          'invalid method',
        ]);
        await expectNoCallReachedTheUpstream();
      },
    );

    it('checks the method before the request id', async () => {
      expect(await client.call('a..b', { request_id: -1 })).toEqual([
        'error',
        { request_id: -1, error_kind: 'validation_error' },
        'invalid method',
      ]);
      await expectNoCallReachedTheUpstream();
    });

    it('lets error fields override same-named meta keys', async () => {
      const meta = { request_id: 1, error_kind: 'mine', keep: 'me' };
      expect(await client.call('a..b', meta)).toEqual([
        'error',
        { request_id: 1, error_kind: 'validation_error', keep: 'me' },
        'invalid method',
      ]);
      t.upstream.on('POST /x', { status: 404, json: { missing: true } });
      const withHttp = { request_id: 2, error_kind: 'mine', http_error: 'mine', keep: 'me' };
      expect(await client.call('x', withHttp)).toEqual([
        'error',
        { request_id: 2, error_kind: 'http_error', http_error: 404, keep: 'me' },
        { missing: true },
      ]);
    });

    it('echoes a client http_error key on errors that carry no http_error of their own', async () => {
      t.upstream.on('POST /bad', { text: '{' });
      const meta = { request_id: 3, http_error: 'mine' };
      expect(await client.call('bad', meta)).toEqual([
        'error',
        { request_id: 3, http_error: 'mine', error_kind: 'data_error' },
        parserMessage('{'),
      ]);
      expect(await client.call('a..b', meta)).toEqual([
        'error',
        { request_id: 3, http_error: 'mine', error_kind: 'validation_error' },
        'invalid method',
      ]);
    });
  });

  describe('results (SPEC §4.3)', () => {
    beforeEach(async () => {
      t = await startTestGateway();
      ({ client } = await t.hello());
    });

    async function replyTo(reply: Reply, meta: Record<string, unknown> = { request_id: 1 }): Promise<unknown> {
      t.upstream.on('POST /x', reply);
      return client.call('x', meta);
    }

    it('answers 200 with valid JSON with a result frame', async () => {
      expect(await replyTo({ json: { a: [1, 'b'] } })).toEqual(['result', { request_id: 1 }, { a: [1, 'b'] }]);
      expect(await replyTo({ json: null })).toEqual(['result', { request_id: 1 }, null]);
      expect(await replyTo({ headers: { 'Content-Type': 'application/json; charset=utf-8' }, text: '"s"' })).toEqual([
        'result',
        { request_id: 1 },
        's',
      ]);
    });

    it('answers 200 with invalid JSON with a data_error carrying the parser message', async () => {
      const text = '{"a": 1,';
      expect(await replyTo({ text })).toEqual([
        'error',
        { request_id: 1, error_kind: 'data_error' },
        parserMessage(text),
      ]);
    });

    it('answers 200 without a JSON Content-Type with http_error 500 and null', async () => {
      expect(await replyTo({ headers: { 'Content-Type': 'text/plain' }, text: '{"a":1}' })).toEqual([
        'error',
        { request_id: 1, error_kind: 'http_error', http_error: 500 },
        null,
      ]);
    });

    it.each([400, 404, 503])('answers status %i with its JSON body', async (status) => {
      expect(await replyTo({ status, json: { why: 'because' } })).toEqual([
        'error',
        { request_id: 1, error_kind: 'http_error', http_error: status },
        { why: 'because' },
      ]);
    });

    it.each([400, 404, 503])('answers status %i with null when its body is not JSON', async (status) => {
      expect(await replyTo({ status, headers: { 'Content-Type': 'text/html' }, text: '<h1>no</h1>' })).toEqual([
        'error',
        { request_id: 1, error_kind: 'http_error', http_error: status },
        null,
      ]);
    });

    it.each([201, 204, 301, 418, 502])('answers status %i with http_error carrying that status', async (status) => {
      const reply = await replyTo({
        status,
        headers: { 'Content-Type': 'text/plain' },
        text: status === 204 ? '' : 'x',
      });
      expect(reply).toEqual(['error', { request_id: 1, error_kind: 'http_error', http_error: status }, null]);
    });

    it('answers a connection error with http_error 500 and keeps the socket open', async () => {
      expect(await replyTo('destroy')).toEqual([
        'error',
        { request_id: 1, error_kind: 'http_error', http_error: 500 },
        null,
      ]);
      expect(await client.call('after', { request_id: 2 })).toEqual([
        'result',
        { request_id: 2 },
        { args: [], kwargs: {} },
      ]);
    });

    it('runs calls concurrently: a fast call is answered before a slow one', async () => {
      const release = deferred();
      t.upstream.on('POST /slow', async () => {
        await release.promise;
        return { json: 'slow' };
      });
      t.upstream.on('POST /fast', { json: 'fast' });
      client.send(['slow', { request_id: 1 }, [], {}]);
      await t.upstream.requestTo('/slow');
      client.send(['fast', { request_id: 2 }, [], {}]);
      expect(await client.next()).toEqual(['result', { request_id: 2 }, 'fast']);
      release.resolve();
      expect(await client.next()).toEqual(['result', { request_id: 1 }, 'slow']);
    });
  });

  describe('with UPSTREAM_TIMEOUT=200ms', () => {
    beforeEach(async () => {
      t = await startTestGateway({ UPSTREAM_TIMEOUT: '200ms' });
      ({ client } = await t.hello());
    });

    it('answers a timeout with http_error 500 and keeps the socket open', async () => {
      t.upstream.on('POST /slow', 'hang');
      expect(await client.call('slow', { request_id: 1 })).toEqual([
        'error',
        { request_id: 1, error_kind: 'http_error', http_error: 500 },
        null,
      ]);
      expect(await client.call('after', { request_id: 2 })).toEqual([
        'result',
        { request_id: 2 },
        { args: [], kwargs: {} },
      ]);
    });
  });

  describe('with UPSTREAM_TIMEOUT=1s and UPSTREAM_MAX_SOCKETS=1', () => {
    beforeEach(async () => {
      t = await startTestGateway({ UPSTREAM_TIMEOUT: '1s', UPSTREAM_MAX_SOCKETS: '1' });
      ({ client } = await t.hello());
    });

    it('counts time in the queue toward the timeout, then serves the next call', async () => {
      t.upstream.on('POST /slow', 'hang');
      t.upstream.on('POST /queued', 'hang');
      client.send(['slow', { request_id: 1 }, [], {}]); // holds the only socket for its 1 s
      await t.upstream.requestTo('/slow');
      const queuedAt = Date.now();
      client.send(['queued', { request_id: 2 }, [], {}]); // waits ~1 s for the socket
      const timedOut = (requestId: number): unknown[] => [
        'error',
        { request_id: requestId, error_kind: 'http_error', http_error: 500 },
        null,
      ];
      expect(await client.next(3000)).toEqual(timedOut(1));
      expect(await client.next(3000)).toEqual(timedOut(2));
      // Its 1 s ran from when it was issued, not from when it got the socket (that would be ~2 s).
      expect(Date.now() - queuedAt).toBeLessThan(1600);
      expect(await client.call('after', { request_id: 3 })).toEqual([
        'result',
        { request_id: 3 },
        { args: [], kwargs: {} },
      ]);
    });
  });

  describe('with MAX_PAYLOAD_BYTES=1KiB', () => {
    beforeEach(async () => {
      t = await startTestGateway({ MAX_PAYLOAD_BYTES: '1KiB' });
      ({ client } = await t.hello());
    });

    it('answers an upstream body over the limit with http_error 500 and keeps the socket open', async () => {
      t.upstream.on('POST /big', { json: 'x'.repeat(2000) });
      expect(await client.call('big', { request_id: 1 })).toEqual([
        'error',
        { request_id: 1, error_kind: 'http_error', http_error: 500 },
        null,
      ]);
      expect(await client.call('after', { request_id: 2 })).toEqual([
        'result',
        { request_id: 2 },
        { args: [], kwargs: {} },
      ]);
    });
  });

  describe('with UPSTREAM_MAX_SOCKETS=1 and UPSTREAM_QUEUE_LIMIT=1', () => {
    beforeEach(async () => {
      t = await startTestGateway({ UPSTREAM_MAX_SOCKETS: '1', UPSTREAM_QUEUE_LIMIT: '1' });
      ({ client } = await t.hello());
    });

    it('refuses a call beyond the queue with internal_error too_many_requests', async () => {
      const release = deferred();
      t.upstream.on('POST /held', async () => {
        await release.promise;
        return { json: 'done' };
      });
      client.send(['held', { request_id: 1 }, [], {}]); // in flight
      await t.upstream.requestTo('/held');
      client.send(['held', { request_id: 2 }, [], {}]); // queued
      client.send(['held', { request_id: 3, x: 'y' }, [], {}]); // refused
      expect(await client.next()).toEqual([
        'error',
        { request_id: 3, x: 'y', error_kind: 'internal_error' },
        'too_many_requests',
      ]);
      release.resolve();
      expect(await client.next()).toEqual(['result', { request_id: 1 }, 'done']);
      expect(await client.next()).toEqual(['result', { request_id: 2 }, 'done']);
      expect(callPaths(t)).toEqual(['/held', '/held']);
    });
  });

  describe('malformed frames (SPEC §4.1)', () => {
    beforeEach(async () => {
      t = await startTestGateway({ MAX_FRAME_BYTES: '1KiB' });
      ({ client } = await t.hello());
    });

    async function expectFatal(code: number): Promise<void> {
      expect(await client.next()).toEqual(['fatal_error', { error_kind: 'validation_error' }, expect.any(String)]);
      expect(await client.closed()).toEqual({ code, reason: 'validation_error' });
      expect(callPaths(t)).toEqual([]);
    }

    it.each<[string, string]>([
      ['not JSON', '["x", {"request_id": 1}, [], {}'],
      ['an empty message', ''],
      ['a JSON object', '{"method": "x", "meta": {"request_id": 1}}'],
      ['a JSON string', '"x"'],
      ['three elements', '["x", {"request_id": 1}, []]'],
      ['five elements', '["x", {"request_id": 1}, [], {}, {}]'],
      ['a number as method', '[1, {"request_id": 1}, [], {}]'],
      ['an array as meta', '["x", [1], [], {}]'],
      ['null as meta', '["x", null, [], {}]'],
      ['an object as args', '["x", {"request_id": 1}, {}, {}]'],
      ['an array as kwargs', '["x", {"request_id": 1}, [], []]'],
    ])('closes with 1007 after fatal_error on %s', async (_what, text) => {
      client.send(text);
      await expectFatal(1007);
    });

    it('closes with 1003 after fatal_error on a binary frame', async () => {
      client.sendBinary(Buffer.from(JSON.stringify(['x', { request_id: 1 }, [], {}])));
      await expectFatal(1003);
    });

    it('closes with 1009 after fatal_error on a frame over MAX_FRAME_BYTES', async () => {
      const frame = JSON.stringify(['x', { request_id: 1 }, ['y'.repeat(2000)], {}]);
      client.send(frame);
      await expectFatal(1009);
    });

    it('closes with 1009 after fatal_error on a frame far over MAX_FRAME_BYTES', async () => {
      client.send(JSON.stringify(['x', { request_id: 1 }, ['y'.repeat(100_000)], {}]));
      await expectFatal(1009);
    });

    it('closes with 1007 after fatal_error on a text frame that is not valid UTF-8', async () => {
      client.socket.send(Buffer.from([0x5b, 0x22, 0xff, 0xfe, 0x22, 0x5d]), { binary: false });
      await expectFatal(1007);
    });

    it('relays a frame of exactly MAX_FRAME_BYTES', async () => {
      const empty = JSON.stringify(['x', { request_id: 1 }, [''], {}]);
      const args = ['y'.repeat(1024 - empty.length)];
      expect(JSON.stringify(['x', { request_id: 1 }, args, {}])).toHaveLength(1024);
      expect(await client.call('x', { request_id: 1 }, args)).toEqual([
        'result',
        { request_id: 1 },
        { args, kwargs: {} },
      ]);
    });

    it('leaves other connections untouched', async () => {
      const { client: other } = await t.hello();
      client.send('nope');
      await expectFatal(1007);
      expect(await other.call('x', { request_id: 1 })).toEqual(['result', { request_id: 1 }, { args: [], kwargs: {} }]);
    });
  });

  describe('with routes from a configuration file', () => {
    beforeEach(async () => {
      t = await startTestGateway(
        {},
        (url) => `
destinations:
  chat: { url: "${url}", override_host_header: chat.internal }
  auth: { url: "${url}" }
  api:  { url: "${url}/api", request_id_header: X-Trace }
handlers:
  chat1:
    path: /chat1
    message_handlers:
      "*": chat/
      "gateway.*": auth/chat1
      "rooms.history": chat/v2
      "rooms.*": chat/r
      "rooms.admin.*": api/
`,
      );
      ({ client } = await t.hello({ path: '/chat1' }));
    });

    it('routes the authorization through gateway.* with its path prefix', async () => {
      const auth = await t.upstream.requestTo('/chat1/gateway/authorize_connection');
      expect(auth.headers.host).toBe(new URL(t.upstream.url).host);
    });

    it('routes by exact name, then the longest glob, then *', async () => {
      const cid = ((await t.upstream.requestTo('/chat1/gateway/authorize_connection')).body as CallBody)[0]
        .connection_id;
      await client.call('rooms.history', { request_id: 1 });
      await client.call('rooms.list', { request_id: 2 });
      await client.call('rooms', { request_id: 3 });
      await client.call('rooms.admin.kick', { request_id: 4 });
      await client.call('rooms.history.old', { request_id: 5 });
      await client.call('chat.send', { request_id: 6 });
      expect(callPaths(t)).toEqual([
        '/v2/rooms/history',
        '/r/rooms/list',
        '/rooms',
        '/api/rooms/admin/kick',
        '/r/rooms/history/old',
        '/chat/send',
      ]);
      expect((await t.upstream.requestTo('/rooms')).headers.host).toBe('chat.internal');
      const admin = await t.upstream.requestTo('/api/rooms/admin/kick');
      expect(admin.headers['x-trace']).toBe(`${cid}-4`);
    });

    it('serves no handler on the default path', async () => {
      await expect(t.connect()).rejects.toMatchObject({ status: 404 });
    });
  });

  describe('with WS_PATH=/ws', () => {
    beforeEach(async () => (t = await startTestGateway({ WS_PATH: '/ws' })));

    it('serves the handler on its path only', async () => {
      ({ client } = await t.hello({ path: '/ws', query: 'user=w' }));
      expect(await client.call('x', { request_id: 1 })).toEqual([
        'result',
        { request_id: 1 },
        { args: [], kwargs: {} },
      ]);
      await expect(t.connect()).rejects.toMatchObject({ status: 404 });
    });
  });
});
