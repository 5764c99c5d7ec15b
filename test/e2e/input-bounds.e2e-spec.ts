import { TestGateway, startTestGateway } from './harness/gateway';
import { api } from './harness/http';
import { untilMetric } from './harness/metrics';
import { deferred, waitFor } from './harness/wait';
import { WsClient } from './harness/ws-client';

const AUTH_PATH = '/gateway/authorize_connection';

/** Every input has a bound (issue 22 item 3; SPEC §3, §4.1, §5, §6.2). */
describe('input bounds', () => {
  let t: TestGateway;
  afterEach(() => t.close());

  describe('a deeply nested authorization response (SPEC §3)', () => {
    beforeEach(async () => (t = await startTestGateway()));

    it('5,000 levels: fatal_error 500 and close 4500, logged with the reason and counted', async () => {
      const nested = '{"a":'.repeat(5000) + '1' + '}'.repeat(5000);
      t.upstream.on(`POST ${AUTH_PATH}`, { text: `{"user_id":"deep","x":${nested}}` });
      const client = await t.connect({ query: 'who=deep' });
      const cid = await t.connectionIdOf('who=deep');
      expect(await client.next()).toEqual(['fatal_error', { error_kind: 'http_error', http_error: 500 }, null]);
      expect(await client.closed()).toEqual({ code: 4500, reason: 'backend_error' });
      const line = await waitFor(
        () =>
          t.logs
            .map((l) => JSON.parse(l) as Record<string, unknown>)
            .find((l) => l.msg === 'authorization failed' && l.connection_id === cid),
        'the "authorization failed" log line',
      );
      expect(line).toMatchObject({ level: 'warn', reason: expect.stringMatching(/nested deeper than 128/) });
      await untilMetric(t.apiUrl, 'gateway_auth_total{result="invalid_response"}', (n) => n === 1);
    });

    it('128 levels (the root object being level 1) is still a valid identity', async () => {
      const nested = '['.repeat(127) + ']'.repeat(127);
      t.upstream.on(`POST ${AUTH_PATH}`, { text: `{"user_id":"deep","x":${nested}}` });
      const { hello } = await t.hello();
      expect(hello).toEqual(['hello', {}, { user_id: 'deep', x: JSON.parse(nested) }]);
    });
  });

  describe('expires_in (SPEC §6.2)', () => {
    beforeEach(async () => (t = await startTestGateway()));

    const subscribeWith = async (expiresIn: unknown): Promise<number> => {
      const res = await api(t.apiUrl, 'POST', '/v1/lattice/chat', {
        private: { alice: { room: { expires_in: expiresIn } } },
      });
      return res.status;
    };

    it.each([
      ['a trailing word', '10s banana'],
      ['a leading word', 'banana 10s'],
      ['65 characters that would parse', '0'.repeat(63) + '1s'],
      ['1 MiB of digits', '1'.repeat(1024 * 1024) + 's'],
      ['an exponent', '1e3s'],
      ['no unit', '10'],
    ])('is 400 for %s', async (_what, value) => {
      expect(await subscribeWith(value)).toBe(400);
    });

    it.each(['10s', '90 minutes', '1h 30m', '1.5h', '200ms', '0'.repeat(62) + '1s'])('accepts %j', async (value) => {
      expect(await subscribeWith(value)).toBe(204);
    });
  });

  describe('the gateway. method prefix in any letter case (SPEC §4.1)', () => {
    beforeEach(async () => (t = await startTestGateway()));

    it.each(['Gateway.authorize_connection', 'GATEWAY.session_inactive', 'gAtEwAy.x.y'])(
      'answers %s with "invalid method" and sends nothing upstream',
      async (method) => {
        const { client } = await t.hello();
        expect(await client.call(method, { request_id: 1 })).toEqual([
          'error',
          { request_id: 1, error_kind: 'validation_error' },
          'invalid method',
        ]);
        expect(await client.call('gateways.ok', { request_id: 2 })).toEqual([
          'result',
          { request_id: 2 },
          { args: [], kwargs: {} },
        ]);
        expect(t.upstream.requests.map((r) => r.path)).toEqual([AUTH_PATH, '/gateways/ok']);
      },
    );
  });

  describe('client frames before hello (SPEC §3), MAX_FRAME_BYTES=16KiB', () => {
    let releaseAuth: () => void;
    beforeEach(async () => {
      t = await startTestGateway({ MAX_FRAME_BYTES: '16KiB' });
      const gate = deferred();
      releaseAuth = () => gate.resolve();
      t.upstream.on(`POST ${AUTH_PATH}`, async () => {
        await gate.promise;
        return { json: { user_id: 'u1' } };
      });
    });
    afterEach(() => releaseAuth());

    async function pendingClient(): Promise<WsClient> {
      const client = await t.connect();
      await t.upstream.requestTo(AUTH_PATH);
      return client;
    }

    const frameOf = (bytes: number): string => {
      const head = JSON.stringify(['x', { request_id: 1 }, [''], {}]);
      return head.replace('[""]', `["${'p'.repeat(bytes - head.length)}"]`);
    };

    it('refuses a frame over MAX_FRAME_BYTES at once, as after hello: fatal_error and close 1009', async () => {
      const client = await pendingClient();
      client.send(frameOf(16 * 1024 + 1));
      expect(await client.next()).toEqual([
        'fatal_error',
        { error_kind: 'validation_error' },
        expect.stringContaining('16384'),
      ]);
      expect(await client.closed()).toEqual({ code: 1009, reason: 'validation_error' });
    });

    it('holds at most 64 KiB of frames: beyond it fatal_error validation_error and close 1008, nothing sent upstream', async () => {
      const client = await pendingClient();
      for (let i = 0; i < 4; i++) client.send(frameOf(16 * 1024)); // exactly 64 KiB: kept
      await client.flush();
      expect(client.socket.readyState).toBe(client.socket.OPEN);
      client.send(frameOf(40));
      expect(await client.next()).toEqual([
        'fatal_error',
        { error_kind: 'validation_error' },
        expect.stringContaining('65536'),
      ]);
      expect(await client.closed()).toEqual({ code: 1008, reason: 'early_frames_over_limit' });
      releaseAuth();
      expect(t.upstream.requests.map((r) => r.path)).toEqual([AUTH_PATH]);
    });

    it('replays up to 64 KiB of early frames after hello', async () => {
      const client = await pendingClient();
      for (let i = 0; i < 4; i++) client.send(frameOf(16 * 1024).replace('"request_id":1', `"request_id":${2 + i}`));
      await client.flush();
      releaseAuth();
      expect(await client.next()).toEqual(['hello', {}, { user_id: 'u1' }]);
      const ids = [await client.next(), await client.next(), await client.next(), await client.next()].map(
        (f) => f[1].request_id,
      );
      expect(ids.sort()).toEqual([2, 3, 4, 5]);
    });
  });

  describe('topic and namespace names of at most 256 characters (SPEC §5)', () => {
    let cid: string;
    beforeEach(async () => {
      t = await startTestGateway();
      ({ cid } = await t.helloAs('alice'));
    });

    const name = (chars: number): string => 'a/' + 'b'.repeat(chars - 2);

    type Request = (name: string) => [method: string, path: string, body: unknown];
    it.each<[string, Request]>([
      ['topic subscribe', (n: string) => ['PUT', `/v1/connection/${cid}/subscriptions/${n}`, undefined]],
      ['topic unsubscribe', (n: string) => ['DELETE', `/v1/connection/${cid}/subscriptions/${n}`, undefined]],
      ['publish', (n: string) => ['POST', `/v1/publish/${n}`, { m: 1 }]],
      ['lattice subscribe', (n: string) => ['PUT', `/v1/connection/${cid}/lattices/${n}`, {}]],
      ['lattice unsubscribe', (n: string) => ['DELETE', `/v1/connection/${cid}/lattices/${n}`, undefined]],
      ['lattice update', (n: string) => ['POST', `/v1/lattice/${n}`, {}]],
    ])('%s: 256 characters is fine, 257 is 404, alone and in /v1/batch', async (_what, request) => {
      for (const [chars, status] of [
        [256, 204],
        [257, 404],
        [5000, 404],
      ] as const) {
        const [method, path, body] = request(name(chars));
        const single = await api(t.apiUrl, method, path, body);
        expect([chars, single.status]).toEqual([chars, status]);
        const batch = await api(t.apiUrl, 'POST', '/v1/batch', {
          commands: [body === undefined ? { method, path } : { method, path, body }],
        });
        expect([chars, batch.status, batch.json()]).toEqual([chars, 200, { results: [{ status }] }]);
      }
    });

    it('a 1 MiB topic in /v1/batch is 404 like any other over 256 characters', async () => {
      const path = `/v1/publish/${'t'.repeat(1024 * 1024)}`;
      const batch = await api(t.apiUrl, 'POST', '/v1/batch', { commands: [{ method: 'POST', path, body: { m: 1 } }] });
      expect([batch.status, batch.json()]).toEqual([200, { results: [{ status: 404 }] }]);
    });
  });
});
