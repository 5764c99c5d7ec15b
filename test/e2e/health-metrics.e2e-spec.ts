import { TestGateway, startTestGateway } from './harness/gateway';
import { api } from './harness/http';
import { MetricsText, scrapeMetrics, untilMetric } from './harness/metrics';

/** SPEC §1, §10: health routes on both listeners, /metrics on the internal one, metric values move. */
describe('health and metrics (SPEC §10)', () => {
  let t: TestGateway;
  beforeEach(async () => (t = await startTestGateway()));
  afterEach(() => t.close());

  const scrape = (): Promise<MetricsText> => scrapeMetrics(t.apiUrl);

  describe('health', () => {
    it.each([
      ['public', '/health/live'],
      ['public', '/health/ready'],
      ['internal', '/health/live'],
      ['internal', '/health/ready'],
    ])('answers 200 on the %s listener at %s', async (listener, path) => {
      const res = await api(listener === 'public' ? t.publicUrl : t.apiUrl, 'GET', path);
      expect(res.status).toBe(200);
      expect(res.json()).toMatchObject({ status: 'ok' });
    });
  });

  describe('/metrics', () => {
    it('is absent from the public listener', async () => {
      expect((await api(t.publicUrl, 'GET', '/metrics')).status).toBe(404);
    });

    it('serves Prometheus text on the internal listener with default and gateway metrics', async () => {
      const res = await api(t.apiUrl, 'GET', '/metrics');
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
      const metrics = await scrape();
      expect(metrics.families).toContain('process_cpu_user_seconds_total');
      for (const family of [
        'gateway_connections',
        'gateway_connections_opened_total',
        'gateway_auth_total',
        'gateway_upstream_requests_total',
        'gateway_upstream_request_duration_seconds',
        'gateway_frames_sent_total',
        'gateway_client_frames_total',
        'gateway_backend_api_requests_total',
        'gateway_topics',
        'gateway_lattice_namespaces',
        'gateway_slow_consumer_closes_total',
      ]) {
        expect([family, metrics.families.has(family)]).toEqual([family, true]);
      }
    });

    it('moves when a client connects, calls, is published to and disconnects', async () => {
      const user = 'metricsuser7q';
      const topicPath = 'room/zq9topic';
      const before = await scrape();
      expect(before.value('gateway_connections')).toBe(0);
      expect(before.value('gateway_topics')).toBe(0);

      const { client } = await t.hello({ query: `user=${user}` });
      const cid = await t.connectionIdOf();
      const connected = await scrape();
      expect(connected.value('gateway_connections')).toBe(1);
      expect(connected.value('gateway_connections_opened_total')).toBe(
        before.value('gateway_connections_opened_total') + 1,
      );
      expect(connected.value('gateway_auth_total{result="ok"}')).toBe(
        before.value('gateway_auth_total{result="ok"}') + 1,
      );
      expect(connected.value('gateway_frames_sent_total{type="hello"}')).toBe(
        before.value('gateway_frames_sent_total{type="hello"}') + 1,
      );

      expect(await client.call('echo', { request_id: 1 }, ['x'])).toEqual([
        'result',
        { request_id: 1 },
        { args: ['x'], kwargs: {} },
      ]);
      const called = await scrape();
      const okCalls = 'gateway_upstream_requests_total{destination="default",kind="call",outcome="ok"}';
      const callDurations = 'gateway_upstream_request_duration_seconds_count{destination="default",kind="call"}';
      expect(called.value(okCalls)).toBe(connected.value(okCalls) + 1);
      expect(called.value(callDurations)).toBe(connected.value(callDurations) + 1);
      expect(called.value('gateway_client_frames_total{outcome="call"}')).toBe(
        connected.value('gateway_client_frames_total{outcome="call"}') + 1,
      );

      expect((await api(t.apiUrl, 'PUT', `/v1/connection/${cid}/subscriptions/${topicPath}`)).status).toBe(204);
      const subscribed = await scrape();
      expect(subscribed.value('gateway_topics')).toBe(1);

      expect((await api(t.apiUrl, 'POST', `/v1/publish/${topicPath}`, { n: 1 })).status).toBe(204);
      expect(await client.next()).toEqual(['message', { topic: 'room.zq9topic' }, { n: 1 }]);
      const published204 = 'gateway_backend_api_requests_total{endpoint="publish",status="204"}';
      // The API counter is recorded on the response's 'finish', which may trail the client's view of it.
      await untilMetric(t.apiUrl, published204, (v) => v === subscribed.value(published204) + 1);
      const published = await scrape();
      expect(published.value('gateway_frames_sent_total{type="message"}')).toBe(
        subscribed.value('gateway_frames_sent_total{type="message"}') + 1,
      );
      expect(published.value('gateway_topics')).toBe(1);

      const labelValues = published.labelValues();
      for (const forbidden of [cid, user, 'zq9topic']) {
        expect([forbidden, labelValues.filter((v) => v.includes(forbidden))]).toEqual([forbidden, []]);
      }

      await client.close();
      await untilMetric(t.apiUrl, 'gateway_connections', (v) => v === 0);
      await untilMetric(t.apiUrl, 'gateway_topics', (v) => v === 0);
      const gone = await scrape();
      expect(gone.value('gateway_connections_opened_total')).toBe(connected.value('gateway_connections_opened_total'));
    });

    it('counts result and error frames in gateway_frames_sent_total by type', async () => {
      t.upstream.on('POST /missing', { status: 404, json: null });
      const { client } = await t.hello();
      const before = await scrape();
      expect((await client.call('echo', { request_id: 1 }))[0]).toBe('result');
      expect((await client.call('missing', { request_id: 2 }))[0]).toBe('error');
      const after = await scrape();
      expect(after.value('gateway_frames_sent_total{type="result"}')).toBe(
        before.value('gateway_frames_sent_total{type="result"}') + 1,
      );
      expect(after.value('gateway_frames_sent_total{type="error"}')).toBe(
        before.value('gateway_frames_sent_total{type="error"}') + 1,
      );
    });

    it('counts one lattice frame per receiving connection of an update', async () => {
      const subscribers = [await t.helloAs('ann'), await t.helloAs('bob')];
      // A shared key is visible to users with a private entry for it (SPEC §6).
      const privateEntries = { ann: { room1: { seen_counter: 1 } }, bob: { room1: { seen_counter: 1 } } };
      for (const { cid } of subscribers) {
        expect(
          (await api(t.apiUrl, 'PUT', `/v1/connection/${cid}/lattices/bench/rooms`, { private: privateEntries }))
            .status,
        ).toBe(204);
      }
      for (const { client } of subscribers) expect((await client.next())[0]).toBe('lattice'); // snapshots
      const before = await scrape();
      expect(
        (await api(t.apiUrl, 'POST', '/v1/lattice/bench/rooms', { shared: { room1: { last_message_counter: 1 } } }))
          .status,
      ).toBe(204);
      for (const { client } of subscribers) expect((await client.next())[0]).toBe('lattice');
      const after = await scrape();
      expect(after.value('gateway_frames_sent_total{type="lattice"}')).toBe(
        before.value('gateway_frames_sent_total{type="lattice"}') + 2,
      );
    });

    it('counts a refused authorization by its status, with the label form of the upstream metric', async () => {
      t.upstream.on('POST /gateway/authorize_connection', { status: 403, json: { error: 'no' } });
      const refused = await t.connect();
      expect((await refused.closed()).code).toBe(4403);
      const metrics = await scrape();
      expect(metrics.value('gateway_auth_total{result="http_403"}')).toBe(1);
      expect(metrics.value('gateway_auth_total{result="ok"}')).toBe(0);
      expect(
        metrics.value('gateway_upstream_requests_total{destination="default",kind="auth",outcome="http_403"}'),
      ).toBe(1);
    });
  });
});
