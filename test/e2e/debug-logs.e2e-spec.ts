import { TestGateway, startTestGateway } from './harness/gateway';
import { api } from './harness/http';
import { scrapeMetrics } from './harness/metrics';
import { freePort } from './harness/ports';
import { waitFor } from './harness/wait';

const API_TOKEN = 'SECRET_API_TOKEN_VALUE';
const BEARER = { Authorization: `Bearer ${API_TOKEN}` };
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
type Entry = Record<string, unknown>;

function entries(t: TestGateway): Entry[] {
  return t.logs.map((line) => JSON.parse(line) as Entry);
}

/** The first log entry with `msg` and the given fields, within 2 s. */
function logged(t: TestGateway, msg: string, fields: Entry = {}): Promise<Entry> {
  const matches = (entry: Entry): boolean =>
    entry.msg === msg && Object.entries(fields).every(([key, value]) => entry[key] === value);
  return waitFor(() => entries(t).find(matches), `a "${msg}" log line with ${JSON.stringify(fields)}`);
}

/** Issue 20 §3: enough in the logs and metrics to debug an incident, and never a secret. */
describe('debug logs, request ids and metrics (issue 20)', () => {
  let t: TestGateway;
  afterEach(() => t.close());

  describe('at LOG_LEVEL=debug', () => {
    beforeEach(async () => (t = await startTestGateway({ LOG_LEVEL: 'debug', BACKEND_API_TOKEN: API_TOKEN })));

    it("logs one line per /v1 request with method, route, status, duration and the caller's request id, echoed in the response", async () => {
      const res = await api(
        t.apiUrl,
        'POST',
        '/v1/publish/room/1',
        { text: 'SECRET_PUBLISHED_BODY' },
        { ...BEARER, 'X-Request-Id': 'req-42' },
      );
      expect(res.status).toBe(204);
      expect(res.headers.get('x-request-id')).toBe('req-42');
      const line = await logged(t, 'backend api request', { request_id: 'req-42' });
      expect(line).toMatchObject({
        level: 'debug',
        method: 'POST',
        route: 'publish',
        path: '/v1/publish/room/1',
        status: 204,
      });
      expect(typeof line.duration_ms).toBe('number');
      expect(t.logs.join('\n')).not.toMatch(/SECRET_PUBLISHED_BODY|SECRET_API_TOKEN_VALUE/);
    });

    it('generates a request id when the caller sends none, and gives one to a refused request too', async () => {
      const res = await api(t.apiUrl, 'PUT', '/v1/connection/abc/subscriptions/room', undefined, {
        Authorization: 'Bearer wrong',
      });
      expect(res.status).toBe(401);
      const id = res.headers.get('x-request-id');
      expect(id).toMatch(UUID);
      expect(await logged(t, 'backend api request', { request_id: id })).toMatchObject({
        method: 'PUT',
        route: 'topic_subscribe',
        status: 401,
      });
      expect(t.logs.join('\n')).not.toContain('wrong');
    });

    it('logs one line per client call with connection id, method, destination, outcome and duration, never its args or answer', async () => {
      t.upstream.on('POST /room/send', { json: { echoed: 'SECRET_RESULT' } });
      t.upstream.on('POST /room/fail', { status: 500, json: { e: 'SECRET_ERROR_BODY' } });
      const { client, cid } = await t.helloAs('alice');
      await client.call('room.send', { request_id: 1 }, ['SECRET_ARG'], { k: 'SECRET_KWARG' });
      await client.call('room.fail', { request_id: 2 }, [], {});
      const ok = await logged(t, 'call', { method: 'room.send' });
      expect(ok).toMatchObject({ level: 'debug', connection_id: cid, destination: 'default', outcome: 'ok' });
      expect(typeof ok.duration_ms).toBe('number');
      expect(await logged(t, 'call', { method: 'room.fail' })).toMatchObject({
        connection_id: cid,
        outcome: 'http_500',
        cause: 'status 500',
      });
      expect(t.logs.join('\n')).not.toMatch(/SECRET_(ARG|KWARG|RESULT|ERROR_BODY)/);
    });
  });

  describe('at LOG_LEVEL=info', () => {
    beforeEach(async () => (t = await startTestGateway({ LOG_LEVEL: 'info', REQUEST_ID_HEADER: 'X-Correlation-Id' })));

    it('writes no per-request or per-call line, and still echoes the request id in REQUEST_ID_HEADER', async () => {
      const res = await api(t.apiUrl, 'POST', '/v1/publish/room', {}, { 'X-Correlation-Id': 'corr-7' });
      expect(res.status).toBe(204);
      expect(res.headers.get('x-correlation-id')).toBe('corr-7');
      const { client } = await t.helloAs('bob');
      await client.call('echo', { request_id: 1 }, [], {});
      // The call's answer came back after its line would have been written: none was.
      expect(entries(t).filter((entry) => entry.msg === 'call' || entry.msg === 'backend api request')).toEqual([]);
    });
  });

  describe('the "authorization failed" warning names the destination and the cause', () => {
    it.each<[string, () => Promise<Record<string, string>>, (t: TestGateway) => void, string]>([
      [
        'a status',
        async () => ({}),
        (g) =>
          void g.upstream.on('POST /gateway/authorize_connection', { status: 403, json: { error: 'SECRET_REFUSAL' } }),
        'status 403',
      ],
      [
        'a timeout',
        async () => ({ UPSTREAM_TIMEOUT: '200ms' }),
        (g) => void g.upstream.on('POST /gateway/authorize_connection', 'hang'),
        'timeout',
      ],
      [
        'a refused connection',
        async () => ({ UPSTREAM_URL: `http://127.0.0.1:${await freePort()}` }),
        () => undefined,
        'refused',
      ],
      ['a DNS error', async () => ({ UPSTREAM_URL: 'http://gateway-test-host.invalid:8000' }), () => undefined, 'dns'],
    ])('for %s', async (_case, env, script, cause) => {
      t = await startTestGateway({ LOG_LEVEL: 'info', ...(await env()) });
      script(t);
      const client = await t.connect();
      await client.closed(5000);
      const line = await logged(t, 'authorization failed');
      expect(line).toMatchObject({ level: 'warn', destination: 'default', cause });
      expect(line.url).toMatch(/\/gateway\/authorize_connection$/);
      expect(t.logs.join('\n')).not.toContain('SECRET_REFUSAL');
    });
  });

  describe('metrics on a single node', () => {
    beforeEach(async () => (t = await startTestGateway({ LOG_LEVEL: 'info' })));

    it('exports no cluster-only metric (no gateway_redis_up 0 to trip a "Redis down" alert)', async () => {
      const metrics = await scrapeMetrics(t.apiUrl);
      expect(metrics.families.has('gateway_connections')).toBe(true);
      for (const name of [
        'gateway_redis_up',
        'gateway_redis_reconnects_total',
        'gateway_redis_failovers_total',
        'gateway_redis_command_duration_seconds',
        'gateway_broker_messages_total',
        'gateway_broker_messages_dropped_total',
        'gateway_lattice_repairs_total',
      ]) {
        expect({ name, exported: metrics.families.has(name) }).toEqual({ name, exported: false });
      }
    });

    it('labels one refused authorization the same way in gateway_auth_total and gateway_upstream_requests_total', async () => {
      t.upstream.on('POST /gateway/authorize_connection', { status: 401, json: {} });
      await (await t.connect()).closed();
      const metrics = await scrapeMetrics(t.apiUrl);
      expect(metrics.get('gateway_auth_total{result="http_401"}')).toBe(1);
      expect(metrics.get('gateway_upstream_requests_total{destination="default",kind="auth",outcome="http_401"}')).toBe(
        1,
      );
    });
  });
});
