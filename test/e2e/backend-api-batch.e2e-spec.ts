import { TestGateway, startTestGateway } from './harness/gateway';
import { ApiResponse, api } from './harness/http';
import { within } from './harness/wait';
import {
  BODY_ENDPOINTS,
  CID_ENDPOINTS,
  ENDPOINTS,
  INVALID_LATTICE_ROWS,
  INVALID_USERS_ROWS,
  MALFORMED_CIDS,
  NOT_FOUND_PATHS,
  NO_BODY_ENDPOINTS,
  OVERSIZED,
  RESERVED_NAMESPACE_ROWS,
  UNSUPPORTED_METHOD_ROUTES,
  WELL_FORMED_UNKNOWN_ROWS,
  acceptedBody,
} from './backend-api-rows';

/**
 * `POST /v1/batch` (SPEC §5 [ext], issue 12): every command answers what the
 * single endpoint answers, in order; a malformed envelope is a 400 for the
 * whole batch; the token is checked once.
 */

/** One request of the validation rows, with its body as `api()` sends it (a string is sent as is). */
interface RowRequest {
  readonly what: string;
  readonly method: string;
  readonly path: string;
  readonly body?: unknown;
}

/** Every row of the validation spec that has a status of its own, expanded into requests. */
function rowRequests(cid: string): RowRequest[] {
  const out: RowRequest[] = [];
  const add = (what: string, method: string, path: string, body?: unknown): number =>
    out.push({ what, method, path, body });
  for (const e of ENDPOINTS) add(`endpoint ${e.n}`, e.method, e.path(cid), e.body);
  for (const [what, method, path, body] of WELL_FORMED_UNKNOWN_ROWS) add(what, method, path, body);
  for (const [what, pathOf] of NOT_FOUND_PATHS) {
    for (const method of ['GET', 'PUT', 'POST', 'DELETE'])
      add(`${method} ${what}`, method, pathOf(cid), acceptedBody(method, pathOf(cid)));
  }
  for (const [what, bad] of MALFORMED_CIDS) {
    for (const [n, method, pathOf] of CID_ENDPOINTS)
      add(`endpoint ${n}, cid with ${what}`, method, pathOf(bad), acceptedBody(method, pathOf(bad)));
  }
  for (const [what, pathOf, methods] of UNSUPPORTED_METHOD_ROUTES) {
    for (const method of methods) add(`${method} ${what}`, method, pathOf(cid), acceptedBody(method, pathOf(cid)));
  }
  for (const [n, method, pathOf, body] of RESERVED_NAMESPACE_ROWS)
    add(`endpoint ${n}, reserved namespace ${pathOf(cid)}`, method, pathOf(cid), body);
  for (const [n, method, pathOf] of NO_BODY_ENDPOINTS) add(`endpoint ${n} with a body`, method, pathOf(cid), {});
  for (const [n, method, pathOf] of BODY_ENDPOINTS) add(`endpoint ${n} without a body`, method, pathOf(cid));
  for (const [what, body] of INVALID_LATTICE_ROWS) {
    add(`endpoint 4 with ${what}`, 'PUT', `/v1/connection/${cid}/lattices/ns`, JSON.stringify(body));
    add(`endpoint 6 with ${what}`, 'POST', '/v1/lattice/ns', JSON.stringify(body));
  }
  for (const [what, body] of INVALID_USERS_ROWS) {
    add(`endpoint 7 with ${what}`, 'PUT', `/v1/connection/${cid}/users`, JSON.stringify(body));
    add(`endpoint 8 with ${what}`, 'PUT', '/v1/user/u1/users', JSON.stringify(body));
  }
  return out;
}

interface Command {
  method: string;
  path: string;
  body?: unknown;
}

/** The request as a batch command, or null when a batch cannot express it (its method, or a body that is not JSON). */
function commandOf(req: RowRequest): Command | null {
  if (!['PUT', 'DELETE', 'POST'].includes(req.method) || !req.path.startsWith('/v1/')) return null;
  if (req.body === undefined) return { method: req.method, path: req.path };
  if (typeof req.body !== 'string') return { method: req.method, path: req.path, body: req.body };
  try {
    return { method: req.method, path: req.path, body: JSON.parse(req.body) as unknown };
  } catch {
    return null;
  }
}

/** What the single endpoint's answer looks like as a batch result. */
function asResult(res: ApiResponse): Record<string, unknown> {
  return res.status === 400 ? { status: 400, ...(res.json() as object) } : { status: res.status };
}

const batch = (t: TestGateway, commands: unknown, headers?: Record<string, string>): Promise<ApiResponse> =>
  api(t.apiUrl, 'POST', '/v1/batch', commands, headers);

describe('POST /v1/batch (SPEC §5)', () => {
  let t: TestGateway;
  let cid: string;

  beforeAll(async () => {
    t = await startTestGateway({ MAX_PAYLOAD_BYTES: '64KiB', BATCH_MAX_COMMANDS: '400' });
    ({ cid } = await t.helloAs('alice'));
  });
  afterAll(() => t.close());

  it('answers every command of the validation rows with the status and body of the single endpoint, in order', async () => {
    const requests = rowRequests(cid)
      .map((req) => ({ req, command: commandOf(req) }))
      .filter((r): r is { req: RowRequest; command: Command } => r.command !== null);
    const expected: Array<Record<string, unknown>> = [];
    for (const { req } of requests)
      expected.push({ what: req.what, ...asResult(await api(t.apiUrl, req.method, req.path, req.body)) });
    // The rows reach every status a command can have.
    expect(new Set(expected.map((e) => e.status))).toEqual(new Set([204, 400, 403, 404]));
    expect(requests.length).toBeGreaterThan(200);

    const res = await batch(t, { commands: requests.map((r) => r.command) });
    expect(res.status).toBe(200);
    const { results } = res.json() as { results: Array<Record<string, unknown>> };
    expect(results.map((r, i) => ({ what: requests[i].req.what, ...r }))).toEqual(expected);
  });

  it('runs commands in order: a client sees the publishes of one batch in order, and none after its unsubscribe', async () => {
    const { client, cid: own } = await t.helloAs('bob');
    const commands: Command[] = [{ method: 'PUT', path: `/v1/connection/${own}/subscriptions/order` }];
    for (let n = 1; n <= 50; n++) commands.push({ method: 'POST', path: '/v1/publish/order', body: { n } });
    commands.push({ method: 'DELETE', path: `/v1/connection/${own}/subscriptions/order` });
    commands.push({ method: 'POST', path: '/v1/publish/order', body: { n: 'after' } });
    commands.push(
      { method: 'PUT', path: `/v1/connection/${own}/subscriptions/barrier` },
      { method: 'POST', path: '/v1/publish/barrier', body: 'barrier' },
    );
    const res = await batch(t, { commands });
    expect(res.status).toBe(200);
    expect((res.json() as { results: unknown[] }).results).toEqual(commands.map(() => ({ status: 204 })));
    for (let n = 1; n <= 50; n++) expect(await client.next()).toEqual(['message', { topic: 'order' }, { n }]);
    expect(await client.next()).toEqual(['message', { topic: 'barrier' }, 'barrier']);
  });

  it("keeps going after a failed command: results sit at their command's index", async () => {
    const res = await batch(t, {
      commands: [
        { method: 'POST', path: '/v1/publish/a', body: 1 },
        { method: 'POST', path: '/v1/publish/a.b', body: 1 },
        { method: 'POST', path: '/v1/lattice/ns', body: { shared: { k: { n: 1 } } } },
        { method: 'DELETE', path: '/v1/lattice/gateway/x' },
        { method: 'DELETE', path: `/v1/connection/${cid}/lattices/gateway/x` },
        { method: 'PUT', path: '/v1/user/u1/users', body: ['u2'] },
      ],
    });
    const { results } = res.json() as { results: Array<{ status: number; error?: string }> };
    expect(results.map((r) => r.status)).toEqual([204, 404, 400, 404, 403, 204]);
    expect(results[2]).toEqual({ status: 400, error: 'invalid_lattice', message: expect.any(String) });
  });

  it('delivers a published body as the same JSON, even nested deeper than JSON.stringify reaches', async () => {
    const { client, cid: own } = await t.helloAs('carol');
    const deep = '['.repeat(6000) + '"x"' + ']'.repeat(6000);
    const commands = [
      { method: 'PUT', path: `/v1/connection/${own}/subscriptions/deep` },
      { method: 'POST', path: '/v1/publish/deep?ignored=1', body: { a: [1, 'é', null], b: { c: true } } },
    ];
    // Written as text: the test's own JSON.stringify cannot encode `deep` either.
    const text =
      JSON.stringify({ commands }).slice(0, -2) + `,{"method":"POST","path":"/v1/publish/deep","body":${deep}}]}`;
    const rawDeep = new Promise<string>((resolve) =>
      client.socket.on('message', (data: Buffer) => data.length > 6000 && resolve(data.toString())),
    );
    const res = await batch(t, text);
    expect((res.json() as { results: unknown[] }).results).toEqual([{ status: 204 }, { status: 204 }, { status: 204 }]);
    expect(await client.next()).toEqual(['message', { topic: 'deep' }, { a: [1, 'é', null], b: { c: true } }]);
    expect(await within(rawDeep, 'the deep frame')).toBe(`["message",{"topic":"deep"},${deep}]`);
  });

  describe('400 for the whole batch', () => {
    const malformed: ReadonlyArray<[string, unknown, string]> = [
      ['an array body', [], 'invalid_batch'],
      ['no commands key', { command: [] }, 'invalid_batch'],
      ['commands not an array', { commands: {} }, 'invalid_batch'],
      ['no commands', { commands: [] }, 'invalid_batch'],
      ['a command that is not an object', { commands: ['PUT /v1/x'] }, 'invalid_batch'],
      ['a command without method', { commands: [{ path: '/v1/publish/a', body: 1 }] }, 'invalid_batch'],
      ['a lower-case method', { commands: [{ method: 'post', path: '/v1/publish/a', body: 1 }] }, 'invalid_batch'],
      ['a command without path', { commands: [{ method: 'POST', body: 1 }] }, 'invalid_batch'],
      ['a path that is not a string', { commands: [{ method: 'POST', path: ['/v1/publish/a'] }] }, 'invalid_batch'],
      [
        'a nested batch',
        { commands: [{ method: 'POST', path: '/v1/batch', body: { commands: [] } }] },
        'invalid_batch',
      ],
      [
        'a nested batch with a query',
        { commands: [{ method: 'POST', path: '/v1/batch?x=1', body: { commands: [] } }] },
        'invalid_batch',
      ],
    ];
    it.each(malformed)('answers 400 %s, and runs none of the commands before it', async (_what, body, error) => {
      const res = await batch(t, body);
      expect({ status: res.status, error: (res.json() as { error: string }).error }).toEqual({ status: 400, error });
    });

    const OTHER_METHODS = UNSUPPORTED_METHOD_ROUTES.flatMap(([what, pathOf, methods]) =>
      [...methods, 'OPTIONS']
        .filter((m) => !['PUT', 'DELETE', 'POST'].includes(m))
        .map((m) => [m, what, pathOf] as const),
    );
    it.each(OTHER_METHODS)('answers 400 to a command with method %s (%s)', async (method, _what, pathOf) => {
      const res = await batch(t, {
        commands: [
          { method: 'POST', path: '/v1/publish/a', body: 1 },
          { method, path: pathOf(cid) },
        ],
      });
      expect({ status: res.status, body: res.json() }).toEqual({
        status: 400,
        body: { error: 'invalid_batch', message: 'commands[1].method: must be "PUT", "DELETE" or "POST"' },
      });
    });

    it.each(NOT_FOUND_PATHS.filter(([, pathOf]) => !pathOf('c').startsWith('/v1/')))(
      'answers 400 to a command path %s, not under /v1/',
      async (_what, pathOf) => {
        const res = await batch(t, { commands: [{ method: 'PUT', path: pathOf(cid) }] });
        expect({ status: res.status, error: (res.json() as { error: string }).error }).toEqual({
          status: 400,
          error: 'invalid_batch',
        });
      },
    );

    it('answers the JSON body checks of any body endpoint: Content-Type, invalid JSON, missing body', async () => {
      for (const [body, headers] of [
        ['{"commands":[', {}],
        ['{"commands":[]}', { 'Content-Type': 'text/plain' }],
        [undefined, {}],
      ] as const) {
        const res = await api(t.apiUrl, 'POST', '/v1/batch', body, headers);
        expect({ body, status: res.status, keys: Object.keys(res.json() as object).sort() }).toEqual({
          body,
          status: 400,
          keys: ['error', 'message'],
        });
      }
    });

    it('answers 413 with Connection: close to a batch over MAX_PAYLOAD_BYTES (64 KiB here)', async () => {
      const commands = Array.from({ length: 40 }, () => ({
        method: 'POST',
        path: '/v1/publish/big',
        body: JSON.parse(OVERSIZED) as unknown,
      }));
      const res = await batch(t, { commands });
      expect({ status: res.status, connection: res.headers.get('connection'), text: res.text }).toEqual({
        status: 413,
        connection: 'close',
        text: '',
      });
    });

    it('answers 404 to other methods and to paths below /v1/batch', async () => {
      for (const [method, path] of [
        ['GET', '/v1/batch'],
        ['PUT', '/v1/batch'],
        ['POST', '/v1/batch/'],
        ['POST', '/v1/batch/x'],
        ['POST', '/v1/BATCH'],
      ]) {
        const res = await api(
          t.apiUrl,
          method,
          path,
          method === 'GET' ? undefined : { commands: [{ method: 'POST', path: '/v1/publish/a', body: 1 }] },
        );
        expect({ method, path, status: res.status, text: res.text }).toEqual({ method, path, status: 404, text: '' });
      }
    });
  });
});

describe('POST /v1/batch limits and token (SPEC §1, §5)', () => {
  let t: TestGateway;

  beforeAll(async () => {
    t = await startTestGateway({ BATCH_MAX_COMMANDS: '5', BACKEND_API_TOKEN: 'secret' });
  });
  afterAll(() => t.close());

  const AUTH = { Authorization: 'Bearer secret' };
  const publishes = (count: number, topic = 'limit'): Command[] =>
    Array.from({ length: count }, (_, n) => ({ method: 'POST', path: `/v1/publish/${topic}`, body: { n } }));

  it('runs a batch of exactly BATCH_MAX_COMMANDS and refuses one more command with 400, running none', async () => {
    const { client, cid } = await t.helloAs('dave');
    const subscribe = { method: 'PUT', path: `/v1/connection/${cid}/subscriptions/limit` };
    expect((await batch(t, { commands: [subscribe, ...publishes(4)] }, AUTH)).status).toBe(200);
    for (let n = 0; n < 4; n++) expect(await client.next()).toEqual(['message', { topic: 'limit' }, { n }]);
    const over = await batch(t, { commands: publishes(6) }, AUTH);
    expect({ status: over.status, body: over.json() }).toEqual({
      status: 400,
      body: {
        error: 'too_many_commands',
        message: 'commands: 6 commands, at most 5 (BATCH_MAX_COMMANDS) in one batch',
      },
    });
    // Barrier: nothing of the refused batch arrived before this publish.
    expect((await api(t.apiUrl, 'POST', '/v1/publish/limit', '"barrier"', AUTH)).status).toBe(204);
    expect(await client.next()).toEqual(['message', { topic: 'limit' }, 'barrier']);
  });

  it('checks the bearer token once, for the whole batch: 401 without it (nothing runs), 200 with it', async () => {
    const { client, cid } = await t.helloAs('erin');
    expect((await api(t.apiUrl, 'PUT', `/v1/connection/${cid}/subscriptions/tok`, undefined, AUTH)).status).toBe(204);
    for (const headers of [{}, { Authorization: 'Bearer wrong' }] as Array<Record<string, string>>) {
      const refused = await batch(t, { commands: publishes(2, 'tok') }, headers);
      expect({ status: refused.status, text: refused.text }).toEqual({ status: 401, text: '' });
    }
    const invalid = await api(t.apiUrl, 'POST', '/v1/batch', '{"commands":', {});
    expect(invalid.status).toBe(401);
    const res = await batch(t, { commands: publishes(3, 'tok') }, AUTH);
    expect({ status: res.status, body: res.json() }).toEqual({
      status: 200,
      body: { results: [{ status: 204 }, { status: 204 }, { status: 204 }] },
    });
    // The refused batches published nothing: the first frame is the accepted batch's first publish.
    for (let n = 0; n < 3; n++) expect(await client.next()).toEqual(['message', { topic: 'tok' }, { n }]);
  });
});
