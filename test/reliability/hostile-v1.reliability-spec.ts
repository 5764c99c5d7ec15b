import { LoadClient, SEED, api, pool, rng } from './lib/clients';
import { GatewayProcess } from './lib/gateway';
import { sized } from './lib/profile';
import { Ending, KeptAliveConnection, rawHttp, requestBytes } from './lib/raw-http';
import { Checks, record } from './lib/report';
import { LoadUpstream } from './lib/upstream';

const MAX_PAYLOAD_BYTES = 64 * 1024;
const TOKEN = 'reliability-token-0123456789';
const COUNTS = sized({
  short: { fuzz: 4_000, broken: 1_500, exact: 1_000, keptAlive: 3_000, pipelined: 1_500, token: 1_500 },
  full: { fuzz: 60_000, broken: 20_000, exact: 10_000, keptAlive: 40_000, pipelined: 20_000, token: 20_000 },
});
const CONCURRENCY = 48;
/** Requests a pipelining client writes at once. */
const PIPELINE_DEPTH = 3;

type Rng = ReturnType<typeof rng>;

interface Req {
  readonly kind: string;
  readonly parts: Buffer[];
  readonly ending: Ending;
  /** Statuses SPEC §5 (and HTTP, for what never reaches a route) allows here; 0 = closed without an answer, -1 = we dropped it. */
  readonly allowed: readonly number[];
}

const ROUTED = [204, 400, 403, 404, 413];
const PARSER = [400, 404, 431];
const OK_PATHS = new Set(['/metrics', '/health/live', '/health/ready', '/openapi.json']);

function segment(r: Rng): string {
  return r.pick([
    'room',
    'a:b',
    'x_y-z',
    'A1',
    '',
    '.',
    '..',
    'a.b',
    'a,b',
    '%2F',
    '%zz',
    '%00',
    'é',
    '%C3%A9',
    'gateway',
    '日本',
    '*',
    'x'.repeat(70),
    '~',
  ]);
}

function name(r: Rng): string {
  return Array.from({ length: 1 + r.int(3) }, () => segment(r)).join('/');
}

function jsonBody(r: Rng): string {
  return r.pick([
    '{"x":1}',
    '[1,2,3]',
    '"text"',
    'null',
    '{"shared":{"k":{"n_counter":1}},"private":{"u1":{"k":{}}}}',
    '{"shared":{"k":{"s_set":["a"]}},"private":{"u1":{"k":{"expires_in":"10s"}}}}',
    '{"shared":{"k":{"r_register":[1,{"a":1}]}}}',
    '["u1","u2"]',
    '["bad user"]',
    '{"commands":[{"method":"POST","path":"/v1/publish/a","body":{"x":1}},{"method":"PUT","path":"/v1/nope"}]}',
    '{"commands":[]}',
    '{"a":',
    '{"a":1}}',
    '\u00ff\u00fe',
    '['.repeat(500) + ']'.repeat(500),
    '{"shared":' + '{"a":'.repeat(300) + '1' + '}'.repeat(301),
    JSON.stringify({ big: 'x'.repeat(MAX_PAYLOAD_BYTES) }),
    '',
  ]);
}

/** A route-shaped path with the real connection id most of the time. */
function routePath(r: Rng, cid: string): [string, string] {
  const c = r.chance(0.7) ? cid : segment(r);
  return r.pick<[string, string]>([
    ['PUT', `/v1/connection/${c}/subscriptions/${name(r)}`],
    ['DELETE', `/v1/connection/${c}/subscriptions/${name(r)}`],
    ['POST', `/v1/publish/${name(r)}`],
    ['PUT', `/v1/connection/${c}/lattices/${name(r)}`],
    ['DELETE', `/v1/connection/${c}/lattices/${name(r)}`],
    ['POST', `/v1/lattice/${name(r)}`],
    ['PUT', `/v1/connection/${c}/users`],
    ['PUT', `/v1/user/${name(r)}/users`],
    ['DELETE', `/v1/connection/${c}/users`],
    ['POST', '/v1/batch'],
    ['GET', r.pick(['/metrics', '/health/live', '/openapi.json', '/', '/v1', '/v2/publish/a', `/${name(r)}`])],
  ]);
}

function bodyHeaders(r: Rng, body: Buffer | undefined): { lines: string[]; body: Buffer | undefined } {
  const lines: string[] = [];
  const type = r.pick([
    'application/json',
    'application/json',
    'application/json; charset=utf-8',
    'text/plain',
    'application/json; charset=latin1',
    '',
    null,
  ]);
  if (type !== null) lines.push(`Content-Type: ${type}`);
  if (body === undefined) return { lines, body };
  if (r.chance(0.3)) {
    lines.push('Transfer-Encoding: chunked');
    const cut = r.int(body.length + 1);
    const chunk = (b: Buffer): string =>
      b.length === 0 ? '' : `${b.length.toString(16)}\r\n${b.toString('latin1')}\r\n`;
    return {
      lines,
      body: Buffer.from(chunk(body.subarray(0, cut)) + chunk(body.subarray(cut)) + '0\r\n\r\n', 'latin1'),
    };
  }
  lines.push(`Content-Length: ${body.length}`);
  return { lines, body };
}

/** Anything: route shapes, random methods, bodies, headers, broken request lines. */
function fuzzRequest(r: Rng, cid: string): Req {
  let [method, path] = routePath(r, cid);
  if (r.chance(0.3))
    method = r.pick(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'TRACE', 'XXX', 'put', 'M-SEARCH']);
  if (r.chance(0.05)) path += r.pick(['?x=1', '#f', '?', '%', '/../../etc/passwd']);
  const raw = r.chance(0.6) ? Buffer.from(jsonBody(r), 'latin1') : undefined;
  const { lines, body } = bodyHeaders(r, raw);
  const oddity = r.int(40);
  if (oddity === 0) lines.push(`X-Huge: ${'h'.repeat(17 * 1024)}`);
  if (oddity === 1) lines.push('Content-Length: 1', 'Content-Length: 2');
  if (oddity === 2) lines.push('this is not a header');
  if (oddity === 3) lines.push('Expect: 100-continue');
  if (oddity === 4)
    return {
      kind: 'fuzz',
      parts: [Buffer.from(`${method} ${path} HTTP/9.9\r\n\r\n`)],
      ending: 'wait',
      allowed: PARSER,
    };
  if (oddity === 5)
    return {
      kind: 'fuzz',
      parts: [Buffer.from('\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03')],
      ending: 'wait',
      allowed: [...PARSER, 0],
    };
  if (oddity === 6)
    return {
      kind: 'fuzz',
      parts: [Buffer.from('CONNECT 127.0.0.1:1 HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n')],
      ending: 'wait',
      allowed: [404],
    };
  const okHere = OK_PATHS.has(path.split(/[?#]/)[0]) && (method === 'GET' || method === 'HEAD');
  const batch = path.split(/[?#]/)[0] === '/v1/batch' && method === 'POST';
  return {
    kind: 'fuzz',
    parts: [requestBytes(method, path, lines, body)],
    ending: 'wait',
    allowed: [...ROUTED, ...PARSER, ...(okHere || batch ? [200] : [])],
  };
}

/** Bodies that are cut off, malformed or abandoned on endpoints that read a body (issue 11 defect 4). */
function brokenRequest(r: Rng, cid: string): Req {
  const [method, path] = r.pick<[string, string]>([
    ['POST', `/v1/publish/room/${r.int(10)}`],
    ['POST', '/v1/lattice/ns'],
    ['PUT', `/v1/connection/${cid}/lattices/ns`],
    ['PUT', `/v1/connection/${cid}/users`],
  ]);
  const json = 'Content-Type: application/json';
  switch (r.int(4)) {
    case 0:
      return {
        kind: 'cut off, half-closed',
        parts: [requestBytes(method, path, [json, 'Content-Length: 100'], Buffer.from('{"a":'))],
        ending: 'half-close',
        allowed: [400, 0],
      };
    case 1:
      return {
        kind: 'malformed chunk size',
        parts: [
          requestBytes(method, path, [json, 'Transfer-Encoding: chunked'], Buffer.from('zz\r\n{"a":1}\r\n0\r\n\r\n')),
        ],
        ending: 'wait',
        allowed: [400],
      };
    case 2:
      return {
        kind: 'chunk extension over 16 KiB',
        parts: [
          requestBytes(
            method,
            path,
            [json, 'Transfer-Encoding: chunked'],
            Buffer.from(`7;ext=${'e'.repeat(17 * 1024)}\r\n{"a":1}\r\n0\r\n\r\n`),
          ),
        ],
        ending: 'wait',
        allowed: [400, 413],
      };
    default:
      return {
        kind: 'dropped mid-body',
        parts: [
          requestBytes(method, path, [json, 'Content-Length: 5000'], Buffer.from('{"a":"' + 'x'.repeat(r.int(3000)))),
        ],
        ending: 'drop',
        allowed: [-1],
      };
  }
}

/** A valid request whose fixed path words change case or whose slashes fold: must be 404 (issue 11 defect 3). */
function foldedRequest(r: Rng, cid: string): Req {
  const [method, path, body] = r.pick<[string, string, string | undefined]>([
    ['PUT', `/v1/connection/${cid}/subscriptions/room/1`, undefined],
    ['POST', '/v1/publish/room/1', '{"x":1}'],
    ['POST', '/v1/lattice/ns', '{"shared":{"k":{"n_counter":1}}}'],
    ['DELETE', `/v1/connection/${cid}/users`, undefined],
  ]);
  const words = path.split('/');
  const variants = [
    () => path.replace('/v1/', '/V1/'),
    () => words.map((w, i) => (i === 2 ? w.toUpperCase() : w)).join('/'),
    () => words.map((w, i) => (i === 2 ? w[0].toUpperCase() + w.slice(1) : w)).join('/'),
    () => path.replace('/v1/', '//v1/'),
    () => path.replace('/v1/', '/v1//'),
    () => (path.endsWith('/users') ? path + '/' : path.replace(/\/([^/]+)$/, '//$1')),
  ];
  const lines = body === undefined ? [] : ['Content-Type: application/json', `Content-Length: ${body.length}`];
  return {
    kind: 'folded path',
    parts: [requestBytes(method, r.pick(variants)(), lines, body === undefined ? undefined : Buffer.from(body))],
    ending: 'wait',
    allowed: [404],
  };
}

/** With BACKEND_API_TOKEN: any parseable /v1 request without the right token, broken bodies included. */
function unauthenticatedRequest(r: Rng, cid: string): Req {
  const base = r.chance(0.7) ? fuzzRequest(r, cid) : brokenRequest(r, cid);
  const text = base.parts[0].toString('latin1');
  const [method, path] = text.split(' ');
  // Raw bytes outside ASCII in the path are refused by Node's parser (404) before any route or token check.
  if (
    !/^\/v1\/[\x21-\x7e]*$/.test(path ?? '') ||
    !/^[A-Z]+$/.test(method) ||
    ['XXX', 'CONNECT'].includes(method) ||
    /X-Huge|not a header|Content-Length: 1\r\nContent-Length: 2|HTTP\/9/.test(text)
  ) {
    return unauthenticatedRequest(r, cid);
  }
  const auth = r.pick([
    '',
    `Authorization: Bearer wrong-${TOKEN}\r\n`,
    'Authorization: Basic dXNlcjpwYXNz\r\n',
    `Authorization: Bearer ${TOKEN.slice(0, -1)}\r\n`,
  ]);
  const parts = [Buffer.from(text.replace('Connection: close\r\n', `Connection: close\r\n${auth}`), 'latin1')];
  return { kind: 'no token', parts, ending: base.ending, allowed: base.ending === 'drop' ? [-1] : [401] };
}

/**
 * Any request but those that end their connection (half-close, drop), as a
 * kept-alive client sends it: without `Connection: close`. Pipelined, also
 * without `Expect: 100-continue`: Node (20.x) buffers the 100 of a response
 * still queued behind another and sends it after that response's head, inside
 * its body (docs/RELIABILITY.md, findings), which no client can parse.
 */
function keptAliveRequest(r: Rng, cid: string, pipelined: boolean): Req {
  const roll = r.int(10);
  let req = roll < 8 ? fuzzRequest(r, cid) : roll === 8 ? brokenRequest(r, cid) : foldedRequest(r, cid);
  while (req.ending !== 'wait') req = brokenRequest(r, cid);
  let text = req.parts[0].toString('latin1').replace('Connection: close\r\n', '');
  if (pipelined) text = text.replace('\r\nExpect: 100-continue', '');
  return { ...req, parts: [Buffer.from(text, 'latin1')] };
}

interface PhaseResult {
  readonly sent: number;
  readonly seconds: number;
  readonly statuses: Record<string, number>;
  readonly violations: string[];
  readonly errorLines: number;
}

async function phase(gateway: GatewayProcess, count: number, make: () => Req): Promise<PhaseResult> {
  const started = Date.now();
  const statuses = new Map<string, number>();
  const violations: string[] = [];
  const errorsBefore = gateway.errorLines.length;
  await pool(count, CONCURRENCY, async () => {
    const req = make();
    const answer = await rawHttp(gateway.internalPort, req.parts, req.ending);
    const key = `${req.kind} → ${answer.status}`;
    statuses.set(key, (statuses.get(key) ?? 0) + 1);
    if (!req.allowed.includes(answer.status))
      violations.push(
        `${key} for ${JSON.stringify(req.parts[0].toString('latin1').slice(0, 160))}: ${JSON.stringify(answer.head.slice(0, 100))}`,
      );
  });
  // An ordering barrier: a request answered after every one above was answered.
  await api(gateway.apiUrl, 'GET', '/health/live');
  return {
    sent: count,
    seconds: (Date.now() - started) / 1000,
    statuses: Object.fromEntries([...statuses].sort()),
    violations,
    errorLines: gateway.errorLines.length - errorsBefore,
  };
}

interface KeptAliveResult extends PhaseResult {
  /** Answers lost to ECONNRESET/EPIPE. */
  readonly resets: number;
  /** Pipelined requests written after one whose answer closed the connection: unanswered, the client sends them again (RFC 9112 §9.3.2). */
  readonly afterClose: number;
}

/**
 * Issue 18: CONCURRENCY clients, each on one connection reused until an answer
 * closes it, writing `depth` requests at a time (1: one after another; more:
 * pipelined) and reading their answers in order. A request that gets a reset or
 * a silent close where SPEC §5 gives it a status is a violation.
 */
async function keptAlivePhase(
  gateway: GatewayProcess,
  count: number,
  depth: number,
  make: () => Req,
): Promise<KeptAliveResult> {
  const statuses = new Map<string, number>();
  const violations: string[] = [];
  const errorsBefore = gateway.errorLines.length;
  let sent = 0;
  let resets = 0;
  let afterClose = 0;
  const started = Date.now();
  const client = async (): Promise<void> => {
    let connection: KeptAliveConnection | null = null;
    let previous = '';
    while (sent < count) {
      if (connection === null || !connection.usable) {
        connection?.destroy();
        connection = KeptAliveConnection.open(gateway.internalPort);
        previous = 'a new connection';
      }
      const batch = Array.from({ length: Math.min(depth, count - sent) }, make);
      sent += batch.length;
      const open = connection;
      const answers = await Promise.all(
        batch.map((req) => open.send(req.parts[0], req.parts[0].toString('latin1', 0, 8).split(' ')[0])),
      );
      let closed = false;
      batch.forEach((req, i) => {
        const answer = answers[i];
        if (closed) return void afterClose++;
        closed = answer.closes;
        if (answer.reset) resets++;
        const key = `${req.kind} → ${answer.reset ? 'reset' : answer.status === 0 ? 'closed without an answer' : answer.status}`;
        statuses.set(key, (statuses.get(key) ?? 0) + 1);
        if (!req.allowed.includes(answer.status)) {
          const together =
            depth === 1
              ? ''
              : `; its batch: ${JSON.stringify(batch.map((b, j) => `${answers[j].status} ${b.parts[0].toString('latin1').slice(0, 120)}`))}`;
          violations.push(
            `${key} (after ${previous}) for ${JSON.stringify(req.parts[0].toString('latin1').slice(0, 160))}${together}`,
          );
        }
        previous = `${key} for ${JSON.stringify(req.parts[0].toString('latin1').slice(0, 160))}`;
      });
    }
    connection?.destroy();
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, client));
  await api(gateway.apiUrl, 'GET', '/health/live');
  const seconds = (Date.now() - started) / 1000;
  return {
    sent,
    seconds,
    statuses: Object.fromEntries([...statuses].sort()),
    violations,
    errorLines: gateway.errorLines.length - errorsBefore,
    resets,
    afterClose,
  };
}

describe('hostile /v1 (issue 11)', () => {
  let gateway: GatewayProcess;
  let upstream: LoadUpstream;
  let client: LoadClient | undefined;
  afterEach(async () => {
    await client?.close();
    await gateway?.stop();
    await upstream?.close();
  });

  it(`answers ${Object.values(COUNTS).reduce((a, b) => a + b)} fuzzed requests with SPEC §5 statuses only, never 500, no error log`, async () => {
    const r = rng(SEED);
    const checks = new Checks();
    upstream = await LoadUpstream.start();
    gateway = await GatewayProcess.start({ UPSTREAM_URL: upstream.url, MAX_PAYLOAD_BYTES: String(MAX_PAYLOAD_BYTES) });
    client = await LoadClient.open(gateway.wsUrl, 'user=u1');
    const cid = client.cid;

    const fuzz = await phase(gateway, COUNTS.fuzz, () => fuzzRequest(r, cid));
    const broken = await phase(gateway, COUNTS.broken, () => brokenRequest(r, cid));
    const exact = await phase(gateway, COUNTS.exact, () => foldedRequest(r, cid));
    const keptAlive = await keptAlivePhase(gateway, COUNTS.keptAlive, 1, () => keptAliveRequest(r, cid, false));
    const pipelined = await keptAlivePhase(gateway, COUNTS.pipelined, PIPELINE_DEPTH, () =>
      keptAliveRequest(r, cid, true),
    );
    const all = [fuzz, broken, exact, keptAlive, pipelined];
    const count500 = all
      .flatMap((p) => Object.entries(p.statuses))
      .filter(([k]) => / → 5\d\d$/.test(k))
      .reduce((n, [, v]) => n + v, 0);

    // Still serving: a publish reaches the connected client.
    expect(await api(gateway.apiUrl, 'PUT', `/v1/connection/${cid}/subscriptions/after/fuzz`)).toBe(204);
    const delivered = new Promise<unknown>((resolve) => (client!.onFrame = (f) => f[0] === 'message' && resolve(f[2])));
    expect(await api(gateway.apiUrl, 'POST', '/v1/publish/after/fuzz', { done: true })).toBe(204);

    checks.check('never a 5xx', count500 === 0, count500);
    checks.check('fuzz: only SPEC statuses', fuzz.violations.length === 0, fuzz.violations.slice(0, 8));
    checks.check('fuzz: no error-level log line', fuzz.errorLines === 0, gateway.errorLines.slice(0, 3));
    checks.check(
      'broken/abandoned bodies: only 400 (or a closed socket)',
      broken.violations.length === 0,
      broken.violations.slice(0, 8),
    );
    checks.check(
      'broken/abandoned bodies: no error-level log line (defect 4, fixed on branch of issue 12)',
      broken.errorLines === 0,
      `${broken.errorLines} error lines, e.g. ${JSON.stringify(gateway.errorLines.slice(-2))}`,
    );
    checks.check(
      'exact paths: case-changed or slash-folded /v1 paths are 404 (defect 3, fixed on branch of issue 12)',
      exact.violations.length === 0,
      exact.violations.slice(0, 5),
    );
    checks.check(
      'kept-alive connections: every request gets its SPEC status, never a reset or a silent close (issue 18)',
      keptAlive.violations.length === 0,
      `${keptAlive.resets} resets; ${JSON.stringify(keptAlive.violations.slice(0, 8))}`,
    );
    checks.check(
      'pipelined requests: each gets its SPEC status, in order, up to the one whose answer closes (issue 18)',
      pipelined.violations.length === 0,
      `${pipelined.resets} resets; ${JSON.stringify(pipelined.violations.slice(0, 8))}`,
    );
    checks.check(
      'kept-alive and pipelined: no error-level log line',
      keptAlive.errorLines + pipelined.errorLines === 0,
      gateway.errorLines.slice(0, 3),
    );
    checks.check('still serving: the client got a publish', JSON.stringify(await delivered) === '{"done":true}');
    checks.check('process alive', gateway.alive);
    await client.close();
    client = undefined;
    await gateway.stop();

    gateway = await GatewayProcess.start({
      UPSTREAM_URL: upstream.url,
      MAX_PAYLOAD_BYTES: String(MAX_PAYLOAD_BYTES),
      BACKEND_API_TOKEN: TOKEN,
    });
    client = await LoadClient.open(gateway.wsUrl, 'user=u1');
    const token = await phase(gateway, COUNTS.token, () => unauthenticatedRequest(r, client!.cid));
    checks.check(
      'with BACKEND_API_TOKEN: nothing but 401',
      token.violations.length === 0,
      token.violations.slice(0, 8),
    );
    checks.check(
      'with BACKEND_API_TOKEN: no error-level log line',
      token.errorLines === 0,
      gateway.errorLines.slice(0, 3),
    );

    record('hostile-v1', {
      seed: SEED,
      requests: all.reduce((n, p) => n + p.sent, 0) + token.sent,
      phases: { fuzz, broken, exact, keptAlive, pipelined, token },
      checks: checks.summary,
    });
    checks.assertAll();
  });
});
