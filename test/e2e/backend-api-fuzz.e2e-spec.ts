import fc from 'fast-check';
import * as http from 'node:http';
import { TestGateway, startTestGateway } from './harness/gateway';
import { api } from './harness/http';
import { RawHttpResponse, rawRequest } from './harness/raw-http';
import { waitFor } from './harness/wait';
import { WsClient } from './harness/ws-client';

/**
 * Property (issue 4, SPEC §5): whatever arrives at `/v1` — random paths built
 * from the real route shapes, random methods, bodies, Content-Types, bad UTF-8,
 * deep nesting, huge strings, chunked or not — the answer is one of 204,
 * 400 with `{"error","message"}`, 403/404 with an empty body, or 413 with
 * `Connection: close`; never a 500; and the process keeps serving.
 */

const MAX_PAYLOAD = 64 * 1024;
const BATCH = 50;
const BATCHES = 200; // 10,000 requests
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH'] as const;

/** One generated request; printed short in counterexamples (bodies can be 100 KB). */
class FuzzRequest {
  constructor(
    readonly method: string,
    readonly path: string,
    readonly headers: Record<string, string>,
    readonly body: Buffer | undefined,
    readonly bodyKind: string,
  ) {}

  [fc.toStringMethod](): string {
    const body =
      this.body === undefined
        ? 'no body'
        : `${this.bodyKind} body of ${this.body.length} bytes: ${JSON.stringify(this.body.subarray(0, 120).toString('latin1'))}`;
    return `${this.method} ${JSON.stringify(this.path.slice(0, 300))} ${JSON.stringify(this.headers)} ${body}`;
  }
}

/**
 * Printable ASCII stays as is (`%` too, so broken escapes reach the server);
 * anything else is percent-encoded as UTF-8, as an HTTP client does. (Raw
 * bytes above 0x7f are refused by Node's parser before the app: see the
 * validation spec.)
 */
function toWire(segment: string): string {
  let out = '';
  for (const char of segment) {
    const code = char.codePointAt(0)!;
    out += code >= 0x21 && code <= 0x7e ? char : encodeURIComponent(char);
  }
  return out;
}

function arbitraries(realCid: string): fc.Arbitrary<FuzzRequest> {
  const validPart = fc.stringMatching(/^[A-Za-z0-9_-]{1,12}$/);
  const oddPart = fc.constantFrom(
    '',
    '.',
    ',',
    '%',
    '%%',
    '%zz',
    '%2',
    '%2F',
    '%2f',
    '%2E',
    '%2e',
    '%00',
    '%20',
    '%C3%A9',
    '%E0%A4%A',
    '%FF',
    '%C0%AF',
    'a.b',
    'a,b',
    'a:b',
    'a b',
    '..',
    '.',
    '~',
    '*',
    ':',
    '?',
    '?x=1',
    '#frag',
    ';',
    '=',
    '@',
    '+',
    '!',
    '$',
    '&',
    "'",
    '(',
    ')',
    '[',
    ']',
    '{',
    '}',
    '|',
    '\\',
    '^',
    '`',
    '"',
    '<',
    '>',
    'é',
    'ü',
    'ÿ',
    '日本',
    '😀',
    '\u0000',
    '\t',
    '\u200b',
    'gateway',
    'gateway/user',
    'gateway/x',
    'v1',
    'users',
    'subscriptions',
    'lattices',
  );
  const part = fc.oneof(
    { weight: 6, arbitrary: validPart },
    { weight: 3, arbitrary: oddPart },
    { weight: 2, arbitrary: fc.string({ maxLength: 16 }) },
    { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 8 }) },
    { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 8 }) },
    { weight: 1, arbitrary: fc.stringMatching(/^[A-Za-z0-9_-]{60,70}$/) },
    { weight: 1, arbitrary: fc.stringMatching(/^[A-Za-z0-9:_/-]{250,260}$/) },
  );
  const wirePart = part.map(toWire);
  const cid = fc.oneof({ weight: 3, arbitrary: fc.constant(realCid) }, { weight: 2, arbitrary: wirePart });
  const multi = fc.array(wirePart, { minLength: 1, maxLength: 4 }).map((parts) => parts.join('/'));
  const name = fc.oneof(
    { weight: 4, arbitrary: multi },
    { weight: 1, arbitrary: multi.map((rest) => `gateway/${rest}`) },
    { weight: 1, arbitrary: fc.constantFrom('room/1', 'ns', 'a:b', 'gateway', 'gateway/', '/a', 'a/', 'a//b', '') },
  );
  const tail = fc.constantFrom('', '', '', '', '/', '//', '?x=1', '?', '#x', '/extra');
  const path = fc
    .tuple(
      fc.oneof(
        cid.chain((c) => name.map((topic) => `/v1/connection/${c}/subscriptions/${topic}`)),
        name.map((topic) => `/v1/publish/${topic}`),
        cid.chain((c) => name.map((ns) => `/v1/connection/${c}/lattices/${ns}`)),
        name.map((ns) => `/v1/lattice/${ns}`),
        cid.map((c) => `/v1/connection/${c}/users`),
        name.map((uid) => `/v1/user/${uid}/users`),
        fc.array(wirePart, { maxLength: 6 }).map((parts) => '/v1/' + parts.join('/')),
        fc.array(wirePart, { maxLength: 6 }).map((parts) => '/' + parts.join('/')),
        fc.constantFrom(
          '/',
          '/v1',
          '/v1/',
          '/vvvv',
          '/v1/connection',
          '/v1/publish',
          '/v1/lattice',
          '/v1/user',
          '/v2/publish/a',
        ),
      ),
      tail,
    )
    .map(([p, t]) => p + t);

  // Lattice-shaped JSON: mostly valid, often subtly not.
  const varName = fc.oneof(
    fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_]{0,6}_(counter|set|register)$/),
    fc.constantFrom(
      'n_counter',
      's_set',
      'r_register',
      'n',
      'n_count',
      '1n_counter',
      '_counter',
      'expires_in',
      '__proto___set',
      'constructor_counter',
      'a-b_counter',
      '',
    ),
  );
  const deepArray = fc.integer({ min: 1, max: 3_000 }).map((n) => JSON.parse('['.repeat(n) + ']'.repeat(n)) as unknown);
  const varValue = fc.oneof(
    fc.nat(),
    fc.integer({ min: -5, max: 5 }),
    fc.double(),
    fc.constantFrom(2 ** 53, -0, 1e308),
    fc.array(fc.string({ maxLength: 6 }), { maxLength: 4 }),
    fc.array(fc.jsonValue({ maxDepth: 1 }), { maxLength: 3 }),
    fc.tuple(fc.oneof(fc.nat(), fc.double(), fc.constant(-1)), fc.jsonValue({ maxDepth: 3 })),
    fc.tuple(fc.nat({ max: 3 }), deepArray),
    fc.jsonValue({ maxDepth: 2 }),
  );
  const variables = fc.dictionary(varName, varValue, { maxKeys: 4 });
  const key = fc.oneof(
    fc.stringMatching(/^[A-Za-z0-9:_.-]{1,10}$/),
    fc.string({ maxLength: 8 }),
    fc.constantFrom('__proto__', 'constructor', 'k'),
  );
  const userId = fc.oneof(
    fc.stringMatching(/^[A-Za-z0-9:_/-]{1,10}$/),
    fc.string({ maxLength: 8 }),
    fc.constantFrom('u1', 'a.b', ''),
  );
  const duration = fc.oneof(
    fc.constantFrom('10s', '90 minutes', '1ms', '0s', '-1s', 'soon', '', '1e400s'),
    fc.nat(),
    fc.constant(null),
  );
  const privateEntry = fc
    .tuple(variables, fc.option(duration, { nil: undefined }))
    .map(([vars, expiresIn]) => (expiresIn === undefined ? vars : { ...vars, expires_in: expiresIn }));
  const lattice = fc.oneof(
    {
      weight: 4,
      arbitrary: fc.record(
        {
          shared: fc.dictionary(key, variables, { maxKeys: 3 }),
          private: fc.dictionary(userId, fc.dictionary(key, privateEntry, { maxKeys: 3 }), { maxKeys: 3 }),
        },
        { requiredKeys: [] },
      ),
    },
    {
      weight: 1,
      arbitrary: fc.record(
        {
          shared: fc.jsonValue({ maxDepth: 2 }),
          private: fc.jsonValue({ maxDepth: 2 }),
          other: fc.jsonValue({ maxDepth: 1 }),
        },
        { requiredKeys: [] },
      ),
    },
  );
  const users = fc.oneof(fc.array(userId, { maxLength: 6 }), fc.array(fc.jsonValue({ maxDepth: 1 }), { maxLength: 4 }));

  const json = (kind: string, value: fc.Arbitrary<unknown>): fc.Arbitrary<[string, Buffer]> =>
    value.map((v) => [kind, Buffer.from(JSON.stringify(v) ?? 'null')]);
  const text = (kind: string, value: fc.Arbitrary<string>): fc.Arbitrary<[string, Buffer]> =>
    value.map((v) => [kind, Buffer.from(v)]);
  const depth = fc.oneof(fc.integer({ min: 1, max: 200 }), fc.integer({ min: 200, max: 30_000 }));
  const deepText = fc
    .tuple(depth, fc.constantFrom('[', '{"a":'))
    .map(([n, open]) => (open === '[' ? '['.repeat(n) + ']'.repeat(n) : open.repeat(n) + '1' + '}'.repeat(n)));
  const body: fc.Arbitrary<[string, Buffer] | undefined> = fc.oneof(
    { weight: 5, arbitrary: fc.constant(undefined) },
    { weight: 4, arbitrary: json('lattice', lattice) },
    { weight: 2, arbitrary: json('users', users) },
    { weight: 3, arbitrary: json('json', fc.jsonValue({ maxDepth: 4 })) },
    { weight: 1, arbitrary: text('deep', deepText) },
    {
      weight: 2,
      arbitrary: text(
        'deep register',
        deepText.map((d) => `{"shared":{"k":{"r_register":[1,${d}]}},"private":{"u1":{"k":{"v_register":[2,${d}]}}}}`),
      ),
    },
    {
      weight: 1,
      arbitrary: fc
        .integer({ min: 1_000, max: 100_000 })
        .map((n): [string, Buffer] => [
          'huge string',
          Buffer.from(JSON.stringify({ shared: { k: { s_set: ['x'.repeat(n)] } } })),
        ]),
    },
    {
      weight: 1,
      arbitrary: fc
        .integer({ min: 60_000, max: 70_000 })
        .map((n): [string, Buffer] => ['near-limit string', Buffer.from(JSON.stringify('y'.repeat(n)))]),
    },
    { weight: 1, arbitrary: text('json-ish text', fc.string({ unit: 'grapheme', maxLength: 60 })) },
    {
      weight: 2,
      arbitrary: fc.uint8Array({ maxLength: 300 }).map((b): [string, Buffer] => ['random bytes', Buffer.from(b)]),
    },
    {
      weight: 1,
      arbitrary: fc
        .constantFrom(
          [0xff],
          [0xc3],
          [0xed, 0xa0, 0x80],
          [0xc0, 0xaf],
          [0xef, 0xbb, 0xbf, 0x7b, 0x7d],
          [0xef, 0xbb, 0xbf],
          [0x22, 0x61, 0xff, 0x22],
          [0x5b, 0x22, 0x80, 0x22, 0x5d],
          [0x00],
          [0x7b, 0x7d, 0x00],
        )
        .map((b): [string, Buffer] => ['invalid UTF-8 or BOM', Buffer.from(b)]),
    },
    { weight: 1, arbitrary: fc.constant(['empty', Buffer.alloc(0)] as [string, Buffer]) },
  );
  const contentType = fc.oneof(
    { weight: 8, arbitrary: fc.constant('application/json') },
    {
      weight: 3,
      arbitrary: fc.constantFrom(
        'application/json; charset=utf-8',
        'APPLICATION/JSON',
        'application/json;charset="utf-8"',
        'application/json; charset=latin1',
        'application/json; charset=utf-16',
        'application/json; boundary=x',
        'text/plain',
        'text/json',
        'application/x-www-form-urlencoded',
        'multipart/form-data; boundary=x',
        'application/jsonx',
        '',
        '*/*',
      ),
    },
    { weight: 1, arbitrary: fc.stringMatching(/^[\x21-\x7e]{0,30}$/) },
    { weight: 2, arbitrary: fc.constant(undefined) },
  );

  const headersOf = (
    ct: string | undefined,
    chunked: boolean,
    b: [string, Buffer] | undefined,
  ): Record<string, string> => {
    const headers: Record<string, string> = {};
    if (ct !== undefined) headers['Content-Type'] = ct;
    if (chunked && b !== undefined) headers['Transfer-Encoding'] = 'chunked';
    return headers;
  };
  // Anything at all: a random method on a random path with a random body.
  const anything = fc
    .record({ method: fc.constantFrom(...METHODS), path, body, contentType, chunked: fc.boolean() })
    .map(
      ({ method, path: p, body: b, contentType: ct, chunked }) =>
        new FuzzRequest(method, p, headersOf(ct, chunked, b), b?.[1], b?.[0] ?? 'no'),
    );
  // A real endpoint with its own method and a valid path, so the body reaches the pipes and services.
  const validName = fc.array(validPart, { minLength: 1, maxLength: 3 }).map((parts) => parts.join('/'));
  const namespace = fc.oneof(
    { weight: 4, arbitrary: validName },
    { weight: 1, arbitrary: validName.map((ns) => `gateway/${ns}`) },
  );
  const plausibleTarget = fc.oneof(
    fc.tuple(
      fc.constantFrom('PUT', 'DELETE'),
      validName.map((tp) => `/v1/connection/${realCid}/subscriptions/${tp}`),
    ),
    validName.map((tp): [string, string] => ['POST', `/v1/publish/${tp}`]),
    fc.tuple(
      fc.constantFrom('PUT', 'DELETE'),
      namespace.map((ns) => `/v1/connection/${realCid}/lattices/${ns}`),
    ),
    namespace.map((ns): [string, string] => ['POST', `/v1/lattice/${ns}`]),
    fc.tuple(fc.constantFrom('PUT', 'DELETE'), fc.constant(`/v1/connection/${realCid}/users`)),
    fc.constantFrom<[string, string]>(['PUT', '/v1/user/u1/users'], ['PUT', '/v1/user/u2/users']),
  );
  const plausible = fc
    .record({
      target: plausibleTarget,
      body,
      contentType: fc.oneof(
        { weight: 5, arbitrary: fc.constant('application/json') },
        { weight: 1, arbitrary: contentType },
      ),
      chunked: fc.boolean(),
    })
    .map(
      ({ target: [method, p], body: b, contentType: ct, chunked }) =>
        new FuzzRequest(method, p, headersOf(ct, chunked, b), b?.[1], b?.[0] ?? 'no'),
    );
  return fc.oneof(anything, plausible);
}

/** The SPEC §5 contract for one answer; null when it holds. */
function violation(res: RawHttpResponse): string | null {
  const body = res.body.toString('utf8');
  switch (res.status) {
    case 204:
    case 403:
      return res.body.length === 0 ? null : `${res.status} with a body: ${body.slice(0, 300)}`;
    case 404:
      // SPEC §15.2: GET /v1/connection/{conn_id} of a well-formed unknown id.
      if (body === '{"error":"unknown_connection"}') return null;
      return res.body.length === 0 ? null : `${res.status} with a body: ${body.slice(0, 300)}`;
    case 200:
      // SPEC §15.2: a GET query's JSON answer (HEAD: its headers only).
      return /^application\/json/.test(res.headers['content-type'] ?? '')
        ? null
        : `200 with Content-Type ${String(res.headers['content-type'])}: ${body.slice(0, 300)}`;
    case 413:
      if (res.headers.connection !== 'close')
        return `413 without Connection: close (${String(res.headers.connection)})`;
      return res.body.length === 0 ? null : `413 with a body: ${body.slice(0, 300)}`;
    case 400: {
      if (!/^application\/json/.test(res.headers['content-type'] ?? ''))
        return `400 with Content-Type ${String(res.headers['content-type'])}: ${body.slice(0, 300)}`;
      let parsed: unknown;
      try {
        parsed = JSON.parse(body);
      } catch {
        return `400 with a body that is not JSON: ${body.slice(0, 300)}`;
      }
      const ok =
        typeof parsed === 'object' &&
        parsed !== null &&
        !Array.isArray(parsed) &&
        Object.keys(parsed).sort().join(',') === 'error,message';
      const fields = parsed as { error?: unknown; message?: unknown };
      if (!ok || typeof fields.error !== 'string' || typeof fields.message !== 'string')
        return `400 body is not {"error": string, "message": string}: ${body.slice(0, 300)}`;
      return null;
    }
    default:
      return `status ${res.status}: ${body.slice(0, 300)}`;
  }
}

describe('backend API fuzz (SPEC §5 contract over generated requests)', () => {
  let t: TestGateway;
  let client: WsClient;
  let cid: string;
  const agent = new http.Agent({ keepAlive: true, maxSockets: BATCH });
  let sent = 0;

  beforeAll(async () => {
    t = await startTestGateway({ MAX_PAYLOAD_BYTES: String(MAX_PAYLOAD), LOG_LEVEL: 'warn' });
    ({ client } = await t.hello());
    const auth = await t.upstream.requestTo('/gateway/authorize_connection');
    cid = (auth.body as [{ connection_id: string }])[0].connection_id;
  });
  afterAll(async () => {
    agent.destroy();
    await t.close();
  });

  it(`answers ${BATCH * BATCHES} generated requests with SPEC §5 statuses and body shapes only`, async () => {
    const request = arbitraries(cid);
    const counts = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(fc.array(request, { minLength: BATCH, maxLength: BATCH }), async (batch) => {
        const answers = await Promise.all(
          batch.map(async (req) => {
            sent++;
            try {
              const res = await rawRequest(t.apiUrl, {
                method: req.method,
                path: req.path,
                headers: req.headers,
                body: req.body,
                agent,
              });
              counts.set(res.status, (counts.get(res.status) ?? 0) + 1);
              return { req, problem: violation(res) };
            } catch (err) {
              return { req, problem: `no answer: ${(err as Error).message}` };
            }
          }),
        );
        const failed = answers.filter((a) => a.problem !== null);
        if (failed.length > 0) {
          const shown = failed.slice(0, 5).map((f) => `  ${f.problem}\n    for ${f.req[fc.toStringMethod]()}`);
          throw new Error(
            `${failed.length} of ${batch.length} answers broke the SPEC §5 contract:\n${shown.join('\n')}`,
          );
        }
      }),
      // No shrinking: the gateway keeps state between runs, so a shrunk batch would not replay
      // faithfully; the error names the offending requests and fast-check prints the seed.
      { numRuns: BATCHES, endOnFailure: true, interruptAfterTimeLimit: 100_000, markInterruptAsFailure: true },
    );
    expect(sent).toBeGreaterThanOrEqual(10_000);
    // The generator reaches every status of the contract.
    expect([...counts.keys()].sort((a, b) => a - b)).toEqual([204, 400, 403, 404, 413]);
  }, 150_000);

  it('still serves afterwards: the original client and a new one receive a publish, the listener is healthy', async () => {
    expect((await fetch(t.apiUrl + '/health/live')).status).toBe(200);
    expect((await api(t.apiUrl, 'PUT', `/v1/connection/${cid}/subscriptions/after-fuzz/check-0123456789`)).status).toBe(
      204,
    );
    const { client: fresh } = await t.hello();
    const auth = await t.upstream.requestTo('/gateway/authorize_connection');
    const freshCid = (auth.body as [{ connection_id: string }])[0].connection_id;
    expect(
      (await api(t.apiUrl, 'PUT', `/v1/connection/${freshCid}/subscriptions/after-fuzz/check-0123456789`)).status,
    ).toBe(204);
    expect((await api(t.apiUrl, 'POST', '/v1/publish/after-fuzz/check-0123456789', { done: true })).status).toBe(204);
    expect(await fresh.next()).toEqual(['message', { topic: 'after-fuzz.check-0123456789' }, { done: true }]);
    const delivered = await waitFor(
      () => client.frames.find((f) => f[0] === 'message' && f[1].topic === 'after-fuzz.check-0123456789'),
      'the final publish at the client that took the fuzz',
      5000,
    );
    expect(delivered[2]).toEqual({ done: true });
    expect(t.logs.filter((line) => line.includes('backend API handler failed'))).toEqual([]);
  });
});
