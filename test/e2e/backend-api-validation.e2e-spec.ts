import { TOPOLOGIES } from './harness/cluster';
import { TestGateway, startTestGateway } from './harness/gateway';
import { ApiResponse, api, chunked } from './harness/http';
import { rawStatusLine } from './harness/raw-http';
import {
  BODY_ENDPOINTS,
  CID_ENDPOINTS,
  ENDPOINTS,
  INVALID_LATTICE_ROWS,
  INVALID_USERS_ROWS,
  KIB,
  MALFORMED_CIDS,
  Method,
  NOT_FOUND_PATHS,
  NO_BODY_ENDPOINTS,
  OVERSIZED,
  PathOf,
  RESERVED_NAMESPACE_ROWS,
  UNSUPPORTED_METHOD_ROUTES,
  WELL_FORMED_UNKNOWN_ROWS,
  acceptedBody,
} from './backend-api-rows';

/**
 * SPEC §5 status codes and body shapes of the backend API (seed §4.2–4.4, §7),
 * against the real internal listener.
 */

/** 404, 403 and 401 carry no body at all (SPEC §5). */
function expectEmpty(res: ApiResponse, status: number, what: string): void {
  expect({ what, status: res.status, text: res.text }).toEqual({ what, status, text: '' });
}

/** 400: a JSON body with exactly a string `error` and a string `message`. */
function expectBadRequest(res: ApiResponse, what: string): { error: string; message: string } {
  expect({ what, status: res.status }).toEqual({ what, status: 400 });
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  const body = res.json() as Record<string, unknown>;
  expect(Object.keys(body).sort()).toEqual(['error', 'message']);
  expect(body).toEqual({ error: expect.any(String), message: expect.any(String) });
  expect((body.error as string).length).toBeGreaterThan(0);
  expect((body.message as string).length).toBeGreaterThan(0);
  return body as { error: string; message: string };
}

describe.each(TOPOLOGIES)('backend API validation (SPEC §5, %s)', (_topology, start) => {
  let t: TestGateway;
  let cid: string;

  beforeAll(async () => {
    t = await start({ MAX_PAYLOAD_BYTES: '1KiB' });
    await t.hello();
    const auth = await t.upstream.requestTo('/gateway/authorize_connection');
    cid = (auth.body as [{ connection_id: string }])[0].connection_id;
  });
  afterAll(() => t.close());

  const call = (method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<ApiResponse> =>
    api(t.apiUrl, method, path, body, headers);

  describe('success', () => {
    it.each(ENDPOINTS.map((e) => [e.n, e.method, e]))(
      'endpoint %i (%s) answers 204 with an empty body',
      async (_n, _m, endpoint) => {
        const res = await call(endpoint.method, endpoint.path(cid), endpoint.body);
        expect({ status: res.status, text: res.text }).toEqual({ status: 204, text: '' });
      },
    );

    it('delivers what the endpoints did to the real client', async () => {
      const { client } = await t.hello({ query: 'user=watcher' });
      const auth = await t.upstream.requestTo('/gateway/authorize_connection');
      const own = (auth.body as [{ connection_id: string }])[0].connection_id;
      expect((await call('PUT', `/v1/connection/${own}/subscriptions/a/b`)).status).toBe(204);
      expect((await call('POST', '/v1/publish/a/b', { n: 1 })).status).toBe(204);
      expect(await client.next()).toEqual(['message', { topic: 'a.b' }, { n: 1 }]);
    });

    it.each(WELL_FORMED_UNKNOWN_ROWS)('answers 204 to %s', async (_what, method, path, body) => {
      const res = await call(method, path, body);
      expect({ status: res.status, text: res.text }).toEqual({ status: 204, text: '' });
    });
  });

  describe('404 with an empty body', () => {
    it.each(NOT_FOUND_PATHS)('answers 404 to %s with every method', async (_name, pathOf) => {
      const path = pathOf(cid);
      for (const method of ['GET', 'PUT', 'POST', 'DELETE'] as const) {
        expectEmpty(await call(method, path, acceptedBody(method, path)), 404, `${method} ${path}`);
      }
    });

    it.each(MALFORMED_CIDS)('answers 404 to a conn_id with %s on endpoints 1, 2, 4, 5, 7, 9', async (_what, bad) => {
      for (const [n, method, pathOf] of CID_ENDPOINTS) {
        const path = pathOf(bad);
        expectEmpty(await call(method, path, acceptedBody(method, path)), 404, `endpoint ${n}: ${method} ${path}`);
      }
    });

    it.each(UNSUPPORTED_METHOD_ROUTES)(
      'answers 404, never 405, to unsupported methods on %s',
      async (_name, pathOf, methods) => {
        const path = pathOf(cid);
        for (const method of methods) {
          const res = await call(method, path, acceptedBody(method, path));
          expectEmpty(res, 404, `${method} ${path}`);
          expect(res.headers.get('allow')).toBeNull();
        }
      },
    );

    it.each(UNSUPPORTED_METHOD_ROUTES)(
      'answers 404 to OPTIONS on %s (no automatic Allow answer)',
      async (_name, pathOf) => {
        const path = pathOf(cid);
        const res = await call('OPTIONS', path);
        expectEmpty(res, 404, `OPTIONS ${path}`);
        expect(res.headers.get('allow')).toBeNull();
      },
    );

    it.each([
      ['POST', '/v1/publish/a', '{}'],
      ['POST', '/v1/lattice/ns', '{}'],
      ['PUT', '/v1/connection/c/users', '[]'],
    ])(
      'answers 404 to %s %s with a byte above 0x7f in the last part, raw or percent-encoded',
      async (method, path, body) => {
        expectEmpty(await call(method, `${path}%FC`, body), 404, `${method} ${path}%FC`);
        // Written as is: Node's parser refuses the raw byte (HPE_INVALID_URL) before the app sees the request.
        const raw = Buffer.from(
          `${method} ${path}\xfc HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
          'latin1',
        );
        expect({
          raw: `${method} ${path}\\xfc`,
          status: await rawStatusLine(Number(new URL(t.apiUrl).port), raw),
        }).toEqual({ raw: `${method} ${path}\\xfc`, status: 404 });
      },
    );

    it.each([['/v1/publish/a'], ['/v1/connection/abc/subscriptions/t'], ['/vvvv']])(
      'answers 404 to the unknown verb XXX on %s',
      async (path) => {
        const port = new URL(t.apiUrl).port;
        expect(await rawStatusLine(Number(port), `XXX ${path} HTTP/1.1\r\nHost: x\r\n\r\n`)).toBe(404);
      },
    );
  });

  describe('403 for reserved namespaces', () => {
    it.each(RESERVED_NAMESPACE_ROWS)(
      'endpoint %i (%s) answers 403 with an empty body to a gateway/ namespace',
      async (n, method, pathOf, body) => {
        expectEmpty(await call(method, pathOf(cid), body), 403, `endpoint ${n}`);
      },
    );
  });

  describe('400 with {"error", "message"}', () => {
    it.each(NO_BODY_ENDPOINTS)('endpoint %i (%s) refuses a body', async (n, method, pathOf) => {
      expectBadRequest(await call(method, pathOf(cid), {}), `endpoint ${n} with {}`);
      expectBadRequest(
        await call(method, pathOf(cid), 'x', { 'Content-Type': 'text/plain' }),
        `endpoint ${n} with text`,
      );
    });

    it.each(BODY_ENDPOINTS)('endpoint %i (%s) requires a body', async (n, method, pathOf) => {
      expectBadRequest(await call(method, pathOf(cid)), `endpoint ${n} without body`);
      expectBadRequest(
        await call(method, pathOf(cid), undefined, { 'Content-Type': 'application/json' }),
        `endpoint ${n} without body, with a Content-Type`,
      );
    });

    it.each(BODY_ENDPOINTS)(
      'endpoint %i (%s) requires Content-Type application/json in utf-8',
      async (n, method, pathOf) => {
        const body = pathOf('c').endsWith('/users') ? '["u2"]' : '{}';
        for (const contentType of [
          'text/plain',
          'application/json; charset=latin1',
          'application/jsonx',
          'application/x-www-form-urlencoded',
        ]) {
          expectBadRequest(
            await call(method, pathOf(cid), body, { 'Content-Type': contentType }),
            `endpoint ${n} with ${contentType}`,
          );
        }
        // A Uint8Array body: fetch sends no Content-Type at all.
        const untyped = await fetch(t.apiUrl + pathOf(cid), { method, body: new Uint8Array(Buffer.from(body)) });
        expect({ n, contentType: untyped.headers.get('content-type'), status: untyped.status }).toEqual({
          n,
          contentType: expect.stringMatching(/^application\/json/),
          status: 400,
        });
        await untyped.text();
        for (const contentType of [
          'application/json',
          'application/json; charset=utf-8',
          'Application/JSON; charset="UTF-8"',
        ]) {
          const res = await call(method, pathOf(cid), body, { 'Content-Type': contentType });
          expect({ n, contentType, status: res.status }).toEqual({ n, contentType, status: 204 });
        }
      },
    );

    it.each(BODY_ENDPOINTS)('endpoint %i (%s) refuses invalid JSON', async (n, method, pathOf) => {
      for (const text of ['{', 'nope', '{"a":1}x', "{'a':1}", '[1,]']) {
        expectBadRequest(await call(method, pathOf(cid), text), `endpoint ${n} with ${text}`);
      }
      const invalidUtf8 = new Uint8Array([0x22, 0xff, 0xfe, 0x22]);
      expectBadRequest(await call(method, pathOf(cid), invalidUtf8), `endpoint ${n} with invalid UTF-8`);
    });

    it.each(INVALID_LATTICE_ROWS)('lattice endpoints 4 and 6 refuse %s', async (what, body) => {
      for (const [method, path] of [
        ['PUT', `/v1/connection/${cid}/lattices/ns`],
        ['POST', '/v1/lattice/ns'],
      ]) {
        expectBadRequest(await call(method, path, JSON.stringify(body)), `${method} ${path} with ${what}`);
      }
    });

    it('lattice endpoints 4 and 6 accept content nested 128 levels deep and refuse deeper content with 400, never 500', async () => {
      const nested = (levels: number): string => '['.repeat(levels) + ']'.repeat(levels);
      // body 1, shared 2, key 3, register 4, its value from 5 on: 124 more levels reach 128.
      const body = (levels: number): string =>
        `{"shared":{"k":{"r_register":[1,${nested(levels)}]}},"private":{"u1":{"k":{}}}}`;
      for (const [method, path] of [
        ['PUT', `/v1/connection/${cid}/lattices/deep`],
        ['POST', '/v1/lattice/deep'],
      ]) {
        expect({ method, status: (await call(method, path, body(124))).status }).toEqual({ method, status: 204 });
        for (const levels of [125, 300, 450]) {
          expect(
            expectBadRequest(await call(method, path, body(levels)), `${method} ${path} ${levels} levels`).error,
          ).toBe('invalid_lattice');
        }
      }
      expect((await call('POST', '/v1/lattice/deep', { shared: { k: { r_register: [2, 'flat'] } } })).status).toBe(204);
    });

    it('publish forwards deeply nested JSON as is', async () => {
      const res = await api(t.apiUrl, 'POST', '/v1/publish/deep', '['.repeat(400) + ']'.repeat(400));
      expect({ status: res.status, text: res.text }).toEqual({ status: 204, text: '' });
    });

    it.each(INVALID_USERS_ROWS)('users endpoints 7 and 8 refuse %s', async (what, body) => {
      for (const [method, path] of [
        ['PUT', `/v1/connection/${cid}/users`],
        ['PUT', '/v1/user/u1/users'],
      ]) {
        expectBadRequest(await call(method, path, JSON.stringify(body)), `${method} ${path} with ${what}`);
      }
    });
  });

  describe('413 above MAX_PAYLOAD_BYTES (1 KiB here)', () => {
    const ALL_BODIES: ReadonlyArray<[number, Method, PathOf]> = [
      [1, 'PUT', (c) => `/v1/connection/${c}/subscriptions/t`],
      [3, 'POST', () => '/v1/publish/t'],
      [4, 'PUT', (c) => `/v1/connection/${c}/lattices/ns`],
      [6, 'POST', () => '/v1/lattice/ns'],
      [7, 'PUT', (c) => `/v1/connection/${c}/users`],
      [8, 'PUT', () => '/v1/user/u1/users'],
      [9, 'DELETE', (c) => `/v1/connection/${c}/users`],
    ];

    it.each(ALL_BODIES)(
      'endpoint %i (%s) answers 413 with Connection: close to a 2 KiB body with Content-Length',
      async (n, method, pathOf) => {
        const res = await call(method, pathOf(cid), OVERSIZED);
        expect({ n, status: res.status, connection: res.headers.get('connection'), text: res.text }).toEqual({
          n,
          status: 413,
          connection: 'close',
          text: '',
        });
      },
    );

    it.each(ALL_BODIES)(
      'endpoint %i (%s) answers 413 with Connection: close to a chunked 2 KiB body',
      async (n, method, pathOf) => {
        const half = OVERSIZED.length / 2;
        const res = await chunked(t.apiUrl, method, pathOf(cid), [OVERSIZED.slice(0, half), OVERSIZED.slice(half)]);
        expect({ n, status: res.status, connection: res.headers.get('connection'), text: await res.text() }).toEqual({
          n,
          status: 413,
          connection: 'close',
          text: '',
        });
      },
    );

    it('accepts a chunked body within the limit', async () => {
      const res = await chunked(t.apiUrl, 'POST', '/v1/publish/t', ['{"a":', '1}']);
      expect({ status: res.status, text: await res.text() }).toEqual({ status: 204, text: '' });
    });

    it('accepts a body of exactly 1 KiB', async () => {
      const exact = JSON.stringify('x'.repeat(KIB - 2));
      expect(Buffer.byteLength(exact)).toBe(KIB);
      expect((await call('POST', '/v1/publish/t', exact)).status).toBe(204);
    });

    it('keeps serving after a 413', async () => {
      await call('POST', '/v1/publish/t', OVERSIZED);
      expect((await call('POST', '/v1/publish/t', { ok: true })).status).toBe(204);
    });
  });

  describe('error bodies', () => {
    it("never shows Nest's default {statusCode, message} shape", async () => {
      const requests: Array<[string, string, unknown, Record<string, string>?]> = [
        ['GET', '/', undefined],
        ['GET', '/v1/publish/a', undefined],
        ['POST', '/v1/publish/a%zz', {}],
        ['POST', '/v1/publish/%', {}],
        ['PUT', `/v1/connection/%E0%A4%A/subscriptions/t`, undefined],
        ['PATCH', '/v1/lattice/ns', {}],
        ['POST', '/v1/publish/a', '{', undefined],
        ['POST', '/v1/lattice/ns', [], undefined],
        ['PUT', `/v1/connection/${cid}/users`, {}, undefined],
        ['POST', '/v1/publish/a', 'x', { 'Content-Type': 'text/plain' }],
        ['POST', '/v1/publish/a', OVERSIZED, undefined],
        ['DELETE', '/v1/lattice/gateway/x', undefined],
        ['GET', '/health', undefined],
      ];
      for (const [method, path, body, headers] of requests) {
        const res = await call(method, path, body, headers);
        expect({ method, path, status: res.status, expected: [400, 403, 404, 413].includes(res.status) }).toEqual({
          method,
          path,
          status: res.status,
          expected: true,
        });
        expect({ method, path, text: res.text }).toEqual({
          method,
          path,
          text: expect.not.stringContaining('statusCode'),
        });
        expect({ method, path, text: res.text }).toEqual({
          method,
          path,
          text: expect.not.stringMatching(/<html|<!DOCTYPE|Cannot /i),
        });
        if (res.status === 400) expectBadRequest(res, `${method} ${path}`);
        else expectEmpty(res, res.status, `${method} ${path}`);
      }
    });
  });

  describe('operations routes on the internal listener', () => {
    it.each([['/metrics'], ['/health/live']])('GET %s answers 200', async (path) => {
      const res = await fetch(t.apiUrl + path);
      expect(res.status).toBe(200);
      expect((await res.text()).length).toBeGreaterThan(0);
    });
  });
});

describe('backend API token (SPEC §1, BACKEND_API_TOKEN=secret)', () => {
  let t: TestGateway;
  let cid: string;

  beforeAll(async () => {
    t = await startTestGateway({ BACKEND_API_TOKEN: 'secret', MAX_PAYLOAD_BYTES: '1KiB' });
    await t.hello();
    const auth = await t.upstream.requestTo('/gateway/authorize_connection');
    cid = (auth.body as [{ connection_id: string }])[0].connection_id;
  });
  afterAll(() => t.close());

  const call = (method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<ApiResponse> =>
    api(t.apiUrl, method, path, body, headers);

  it.each([
    ['no Authorization header', undefined],
    ['a wrong token', 'Bearer wrong'],
    ['a longer token', 'Bearer secret2'],
    ['a token prefix', 'Bearer secre'],
    ['the Basic scheme', 'Basic secret'],
    ['the bare token', 'secret'],
    ['an empty bearer', 'Bearer '],
  ])('answers 401 with an empty body to %s', async (_what, authorization) => {
    const headers: Record<string, string> = authorization === undefined ? {} : { Authorization: authorization };
    for (const endpoint of ENDPOINTS) {
      const res = await call(endpoint.method, endpoint.path(cid), endpoint.body, headers);
      expectEmpty(res, 401, `endpoint ${endpoint.n}`);
    }
  });

  it.each([['Bearer secret'], ['bearer secret'], ['BEARER secret']])('answers 204 with "%s"', async (authorization) => {
    for (const endpoint of ENDPOINTS) {
      const res = await call(endpoint.method, endpoint.path(cid), endpoint.body, { Authorization: authorization });
      expect({ n: endpoint.n, status: res.status, text: res.text }).toEqual({ n: endpoint.n, status: 204, text: '' });
    }
  });

  it('checks the token before the path: 401 on unknown paths and methods without it, 404 with it', async () => {
    const paths = [
      ['GET', '/v1/nope'],
      ['PUT', '/v1/publish/a.b'],
      ['GET', '/v1/publish/a'],
      ['POST', '/v1'],
      ['POST', '/v1/connection/a.b/users'],
      ['PUT', '/v1/user/u1/users/'],
      ['POST', '/v1/publish/a%zz'],
      ['POST', '/v1/lattice/%'],
    ];
    for (const [method, path] of paths) {
      expectEmpty(await call(method, path), 401, `${method} ${path} without token`);
      expectEmpty(
        await call(method, path, undefined, { Authorization: 'Bearer secret' }),
        404,
        `${method} ${path} with token`,
      );
    }
  });

  it('checks the token before the body: 401 rather than 400 or 413', async () => {
    expectEmpty(await call('POST', '/v1/publish/a', '{'), 401, 'invalid JSON without token');
    expectEmpty(await call('POST', '/v1/lattice/gateway/x', {}), 401, 'reserved namespace without token');
    expectEmpty(
      await call('POST', '/v1/publish/a', OVERSIZED),
      401,
      'oversized body with Content-Length without token',
    );
    const streamed = await chunked(t.apiUrl, 'POST', '/v1/publish/a', [
      OVERSIZED.slice(0, 1000),
      OVERSIZED.slice(1000),
    ]);
    expect({ status: streamed.status, text: await streamed.text() }).toEqual({ status: 401, text: '' });
    const withToken = await call('POST', '/v1/publish/a', OVERSIZED, { Authorization: 'Bearer secret' });
    expect(withToken.status).toBe(413);
  });

  it("answers 404 to the unknown verb XXX, which Node's parser rejects before any token check", async () => {
    expect(await rawStatusLine(Number(new URL(t.apiUrl).port), 'XXX /v1/publish/a HTTP/1.1\r\nHost: x\r\n\r\n')).toBe(
      404,
    );
  });

  it.each([['/metrics'], ['/health/live']])('serves GET %s without a token', async (path) => {
    expect((await fetch(t.apiUrl + path)).status).toBe(200);
  });
});
