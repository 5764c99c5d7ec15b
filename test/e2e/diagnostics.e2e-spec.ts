import { ChildGateway } from './harness/child-gateway';
import { randomPrefix } from './harness/cluster';
import { TestGateway, startTestGateway } from './harness/gateway';
import { scrapeMetrics } from './harness/metrics';
import { freePort } from './harness/ports';
import { RedisServer } from './harness/redis-server';
import { waitFor } from './harness/wait';
import { HandshakeRefused, WsClient } from './harness/ws-client';

/**
 * Failures that say why: what an operator or a backend's author reads when
 * something is misconfigured. Authorization answers that break a rule of
 * SPEC §3 are logged with the exact rule; refused handshakes (SPEC §2) are
 * counted and logged at info, a line per reason at most every few seconds;
 * the Redis link (SPEC §11) names its address and the cause, never its
 * credentials; start-up warns about a weak BACKEND_API_TOKEN and names where
 * each WebSocket path's calls go.
 */
type LogLine = Record<string, unknown>;
const parsed = (lines: readonly string[]): LogLine[] => lines.map((line) => JSON.parse(line) as LogLine);
const AUTHORIZE = 'POST /gateway/authorize_connection';

describe('diagnostics', () => {
  describe('authorization failures name the rule the answer broke (SPEC §3)', () => {
    let t: TestGateway;
    beforeAll(async () => (t = await startTestGateway({ LOG_LEVEL: 'info' })));
    afterAll(() => t.close());

    it.each([
      ['a status other than 200', { status: 302, json: {} }, 'status 302'],
      [
        'a content type other than JSON',
        { headers: { 'Content-Type': 'text/html' }, text: '{"user_id":"a"}' },
        'content type "text/html" is not application/json (with utf-8 if a charset is given)',
      ],
      ['no user_id', { json: { name: 'alice' } }, 'user_id missing'],
      ['a number as user_id', { json: { user_id: 42 } }, 'user_id is a number, not a string'],
      ['an empty user_id', { json: { user_id: '' } }, 'user_id is empty'],
      ['a user_id too long', { json: { user_id: 'u'.repeat(257) } }, 'user_id longer than 256 characters (257)'],
      [
        'an e-mail address as user_id',
        { json: { user_id: 'alice@example.com' } },
        'user_id has a character outside A-Z a-z 0-9 : _ / - (U+0040 at index 5)',
      ],
    ])('%s', async (_name, reply, reason) => {
      t.upstream.on(AUTHORIZE, reply);
      const before = t.logs.length;
      const client = await t.connect();
      expect(await client.closed()).toEqual({ code: 4500, reason: 'backend_error' });
      const line = await waitFor(
        () => parsed(t.logs.slice(before)).find((entry) => entry.msg === 'authorization failed'),
        'the "authorization failed" line',
      );
      expect(line).toMatchObject({ level: 'warn', reason });
      // The user id itself is never logged (SPEC §10), only the offending character's code point.
      expect(t.logs.slice(before).join('\n')).not.toContain('alice@example.com');
    });
  });

  describe('refused handshakes are counted and logged at info (SPEC §2)', () => {
    let t: TestGateway;
    beforeAll(
      async () =>
        (t = await startTestGateway({
          LOG_LEVEL: 'info',
          ALLOWED_ORIGINS: 'https://app.example',
          MAX_CONNECTIONS: '1',
        })),
    );
    afterAll(() => t.close());

    async function refusedWith(options: Parameters<TestGateway['connect']>[0]): Promise<number> {
      const error = await t.connect(options).then(
        () => null,
        (err: unknown) => err,
      );
      if (!(error instanceof HandshakeRefused)) throw new Error(`expected a refused handshake, got ${String(error)}`);
      return error.status;
    }

    it('counts each refusal by reason, and logs one line per reason within its interval', async () => {
      expect(await refusedWith({ path: '/nowhere' })).toBe(404);
      expect(await refusedWith({ protocols: ['chat'] })).toBe(400);
      for (let i = 0; i < 5; i++) expect(await refusedWith({ headers: { Origin: 'https://evil.example' } })).toBe(403);
      const open: WsClient = await t.connect({ headers: { Origin: 'https://app.example' } });
      expect(await refusedWith({})).toBe(503);
      await open.close();

      const metrics = await scrapeMetrics(t.apiUrl);
      expect(
        ['path', 'subprotocol', 'origin', 'limit'].map((reason) =>
          metrics.get(`gateway_handshakes_refused_total{reason="${reason}"}`),
        ),
      ).toEqual([1, 1, 5, 1]);

      const lines = parsed(t.logs).filter((entry) => entry.msg === 'handshake refused');
      expect(lines.map(({ level, reason, status }) => ({ level, reason, status }))).toEqual([
        { level: 'info', reason: 'path', status: 404 },
        { level: 'info', reason: 'subprotocol', status: 400 },
        { level: 'info', reason: 'origin', status: 403 },
        { level: 'info', reason: 'limit', status: 503 },
      ]);
      expect(lines[0]).toMatchObject({ path: '/nowhere' });
      // The origin line says which origin was refused: what an operator adds to ALLOWED_ORIGINS.
      expect(lines[2]).toMatchObject({ origin: 'https://evil.example' });
    });
  });

  describe('the Redis link names its URL, credentials redacted, and the cause (SPEC §11)', () => {
    const PASSWORD = 'hunter2-SECRET';

    it('at start, when Redis does not answer: a URL without credentials is shown as it is', async () => {
      const url = `redis://127.0.0.1:${await freePort()}/3`;
      const t = await startTestGateway({ LOG_LEVEL: 'info', REDIS_URL: url, REDIS_PREFIX: randomPrefix() });
      try {
        const line = parsed(t.logs).find(
          (entry) => entry.msg === 'redis not reachable at start: running with Redis down, retrying',
        );
        expect(line).toMatchObject({ level: 'warn', redis: url, cause: expect.stringContaining('ECONNREFUSED') });
      } finally {
        await t.close();
      }
    });

    it('when the link goes down and comes back', async () => {
      const redis = await RedisServer.start();
      const t = await startTestGateway({
        LOG_LEVEL: 'info',
        REDIS_URL: `redis://default:${PASSWORD}@127.0.0.1:${redis.port}`,
        REDIS_PREFIX: randomPrefix(),
      });
      try {
        const address = `redis://<redacted>@127.0.0.1:${redis.port}`;
        expect(parsed(t.logs).find((entry) => entry.msg === 'cluster mode')).toMatchObject({ redis: address });
        await redis.kill();
        const down = await waitFor(
          () => parsed(t.logs).find((entry) => entry.msg === 'redis down'),
          'the "redis down" line',
          5000,
        );
        expect(down).toMatchObject({ level: 'warn', redis: address, cause: expect.any(String) });
        // While it stays down, the reason it cannot reconnect is said once (not at every attempt).
        const unreachable = await waitFor(
          () => parsed(t.logs).find((entry) => entry.msg === 'redis unreachable'),
          'the "redis unreachable" line',
          5000,
        );
        expect(unreachable).toMatchObject({
          level: 'warn',
          redis: address,
          cause: expect.stringContaining('ECONNREFUSED'),
        });
        await redis.restart();
        const up = await waitFor(
          () => parsed(t.logs).find((entry) => entry.msg === 'redis up'),
          'the "redis up" line',
          10_000,
        );
        expect(up).toMatchObject({ redis: address });
        expect(t.logs.join('\n')).not.toContain(PASSWORD);
      } finally {
        await t.close();
        await redis.kill();
      }
    }, 30_000);
  });

  describe('start-up (dist/main.js)', () => {
    let gateway: ChildGateway | undefined;
    afterEach(() => gateway?.stop());

    it.each([['change-me'], ['secret'], ['token'], ['short-token-15c']])(
      'warns about BACKEND_API_TOKEN=%s, a placeholder or shorter than 16 characters, without repeating it',
      async (token) => {
        gateway = await ChildGateway.start({ UPSTREAM_URL: 'http://127.0.0.1:9', BACKEND_API_TOKEN: token });
        const warning = gateway.logs.find(
          (entry) => entry.level === 'warn' && /BACKEND_API_TOKEN/.test(String(entry.msg)),
        );
        expect(warning?.msg).toMatch(/BACKEND_API_TOKEN/);
        expect(JSON.stringify(gateway.logs)).not.toContain(`"${token}"`);
      },
    );

    it('gives a long random token no warning, and names each WebSocket path with where its calls go', async () => {
      gateway = await ChildGateway.start({
        UPSTREAM_URL: 'http://127.0.0.1:9/api',
        WS_PATH: '/ws',
        BACKEND_API_TOKEN: 'f3a9c1e0b7d24c58a6e1',
      });
      expect(gateway.logs.filter((entry) => entry.level === 'warn')).toEqual([]);
      expect(gateway.logs.find((entry) => entry.msg === 'gateway started')).toMatchObject({
        handlers: [{ path: '/ws', upstream: ['http://127.0.0.1:9/api'] }],
      });
    });
  });
});
