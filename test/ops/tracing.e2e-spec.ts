import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { ChildGateway } from '../e2e/harness/child-gateway';
import { FakeUpstream, RecordedRequest } from '../e2e/harness/fake-upstream';
import { TestGateway, startTestGateway } from '../e2e/harness/gateway';
import { api } from '../e2e/harness/http';
import { waitFor } from '../e2e/harness/wait';
import { WsClient } from '../e2e/harness/ws-client';
import { OtlpReceiver } from './otlp-receiver';

/**
 * OpenTelemetry tracing (issue 21) against a real OTLP/HTTP receiver: a span
 * per client call, per authorization and per /v1 request; `traceparent` on the
 * upstream request; an incoming /v1 `traceparent` continued; no bodies; and
 * with no OTEL endpoint, nothing of it.
 *
 * Tracing on runs `node dist/main.js` (what production runs): the OTLP
 * exporter loads node:http with a dynamic import(), which jest's module
 * sandbox refuses without --experimental-vm-modules.
 */
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/;

/** The connection id the gateway sent in an authorization request. */
const connectionIdIn = (auth: RecordedRequest): string => (auth.body as [{ connection_id: string }])[0].connection_id;

describe('tracing on (OTEL_EXPORTER_OTLP_ENDPOINT set)', () => {
  let receiver: OtlpReceiver;
  let upstream: FakeUpstream;
  let gw: ChildGateway;
  const clients: WsClient[] = [];

  /** Connect as `user`, await hello; the client and its connection id. */
  async function helloAs(user: string): Promise<{ client: WsClient; cid: string; auth: RecordedRequest }> {
    const { client } = await WsClient.hello(gw.wsUrl, { query: `user=${user}` });
    clients.push(client);
    const auth = await upstream.nextRequest(
      (r) =>
        r.path === '/gateway/authorize_connection' &&
        (r.body as [unknown, unknown, { url_querystring: string }])[2].url_querystring === `user=${user}`,
    );
    return { client, cid: connectionIdIn(auth), auth };
  }

  beforeEach(async () => {
    receiver = await OtlpReceiver.start();
    upstream = await FakeUpstream.start();
    gw = await ChildGateway.start({
      UPSTREAM_URL: upstream.url,
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_BSP_SCHEDULE_DELAY: '50',
      OTEL_SERVICE_NAME: 'gateway-under-test',
    });
  });
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((client) => client.close()));
    await gw.stop();
    await upstream.close();
    await receiver.close();
  });

  it('a client call is a span whose context the upstream request carries as traceparent', async () => {
    const { client, cid } = await helloAs('alice');
    upstream.on('POST /chat/send', { status: 200, json: { sent: true } });
    await client.call('chat.send', { request_id: 7 }, ['a secret body'], { note: 'another secret' });
    const upstreamCall = await upstream.nextRequest((r) => r.path === '/chat/send');
    const [, traceId, spanId] = TRACEPARENT.exec(String(upstreamCall.headers.traceparent)) ?? [];
    expect(traceId).toBeDefined();
    const span = await receiver.span((s) => s.name === 'gateway.call', 'the call span');
    expect(span).toMatchObject({
      traceId,
      spanId,
      parentSpanId: '',
      kind: SpanKind.CLIENT + 1, // OTLP numbers kinds from 1 (INTERNAL), the API from 0
      attributes: {
        'rpc.method': 'chat.send',
        'gateway.destination': 'default',
        'gateway.connection_id': cid,
        'gateway.outcome': 'ok',
        'http.response.status_code': 200,
      },
      resource: { 'service.name': 'gateway-under-test', 'service.instance.id': expect.any(String) },
    });
    expect(receiver.bodies.join('')).not.toMatch(/secret/);
  });

  it('a failed call is a span with an error status and the error kind', async () => {
    const { client } = await helloAs('bob');
    upstream.on('POST /chat/fail', { status: 503, json: { error: 'down' } });
    await client.call('chat.fail', { request_id: 1 });
    const span = await receiver.span(
      (s) => s.name === 'gateway.call' && s.attributes['rpc.method'] === 'chat.fail',
      'the failed call span',
    );
    expect(span.attributes).toMatchObject({ 'gateway.outcome': 'http_error', 'http.response.status_code': 503 });
    expect(span.status.code).toBe(SpanStatusCode.ERROR);
  });

  it('an authorization is a span whose context the authorization request carries', async () => {
    const { cid, auth } = await helloAs('carol');
    const [, traceId, spanId] = TRACEPARENT.exec(String(auth.headers.traceparent)) ?? [];
    const span = await receiver.span(
      (s) => s.name === 'gateway.authorize' && s.attributes['gateway.connection_id'] === cid,
      'the authorization span',
    );
    expect(span).toMatchObject({
      traceId,
      spanId,
      attributes: { 'gateway.destination': 'default', 'gateway.outcome': 'ok', 'http.response.status_code': 200 },
    });
  });

  it('a refused authorization is an error span, and its log line names the trace', async () => {
    upstream.on('POST /gateway/authorize_connection', { status: 401, json: { error: 'who are you' } });
    const client = await WsClient.connect(gw.wsUrl, { query: 'user=mallory' });
    clients.push(client);
    expect((await client.next())[0]).toBe('fatal_error');
    const span = await receiver.span((s) => s.name === 'gateway.authorize', 'the refused authorization span');
    expect(span).toMatchObject({
      status: { code: SpanStatusCode.ERROR },
      attributes: { 'gateway.outcome': 'status 401', 'http.response.status_code': 401 },
    });
    const line = await waitFor(
      () => gw.logs.find((entry) => entry.msg === 'authorization failed'),
      'the "authorization failed" log line',
    );
    expect(line).toMatchObject({ trace_id: span.traceId });
  });

  it('a /v1 request with traceparent continues that trace', async () => {
    const { cid } = await helloAs('dave');
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const parentId = '00f067aa0ba902b7';
    const response = await api(gw.apiUrl, 'PUT', `/v1/connection/${cid}/subscriptions/room/1`, undefined, {
      traceparent: `00-${traceId}-${parentId}-01`,
    });
    expect(response.status).toBe(204);
    const span = await receiver.span((s) => s.traceId === traceId, 'the /v1 span in the incoming trace');
    expect(span).toMatchObject({
      parentSpanId: parentId,
      kind: SpanKind.SERVER + 1,
      name: 'PUT topic_subscribe',
      attributes: {
        'http.request.method': 'PUT',
        'gateway.endpoint': 'topic_subscribe',
        'http.response.status_code': 204,
      },
    });
  });

  it('a /v1 request without traceparent starts a trace of its own', async () => {
    await api(gw.apiUrl, 'POST', '/v1/publish/room/1', { text: 'a secret payload' });
    const span = await receiver.span((s) => s.attributes['http.request.method'] === 'POST', 'the publish span');
    expect(span).toMatchObject({ parentSpanId: '', attributes: { 'http.response.status_code': 204 } });
    expect(span.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(receiver.bodies.join('')).not.toMatch(/secret/);
  });
});

describe('tracing on, with BACKEND_API_TOKEN', () => {
  const TOKEN = 'a-backend-token-of-32-characters';
  let receiver: OtlpReceiver;
  let upstream: FakeUpstream;
  let gw: ChildGateway;

  beforeEach(async () => {
    receiver = await OtlpReceiver.start();
    upstream = await FakeUpstream.start();
    gw = await ChildGateway.start({
      UPSTREAM_URL: upstream.url,
      BACKEND_API_TOKEN: TOKEN,
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_BSP_SCHEDULE_DELAY: '50',
    });
  });
  afterEach(async () => {
    await gw.stop();
    await upstream.close();
    await receiver.close();
  });

  it.each([
    ['no Authorization header', {}],
    ['a wrong token', { authorization: 'Bearer not-the-backend-token-at-all' }],
  ])(
    "a /v1 request refused by the token check (%s) exports no span, not even in the caller's trace",
    async (_, credentials: Record<string, string>) => {
      const refusedTrace = '4bf92f3577b34da6a3ce929d0e0e4736';
      const refused = await api(
        gw.apiUrl,
        'POST',
        '/v1/publish/room/1',
        { n: 1 },
        { ...credentials, traceparent: `00-${refusedTrace}-00f067aa0ba902b7-01` },
      );
      expect(refused.status).toBe(401);
      // Barrier: spans are exported in the order they end, so the refused one would come first.
      const allowedTrace = '0af7651916cd43dd8448eb211c80319c';
      const allowed = await api(
        gw.apiUrl,
        'POST',
        '/v1/publish/room/1',
        { n: 2 },
        { authorization: `Bearer ${TOKEN}`, traceparent: `00-${allowedTrace}-b7ad6b7169203331-01` },
      );
      expect(allowed.status).toBe(204);
      await receiver.span((s) => s.traceId === allowedTrace, 'the span of the allowed request');
      expect(
        receiver.spans.filter((s) => s.traceId === refusedTrace || s.attributes['http.response.status_code'] === 401),
      ).toEqual([]);
    },
  );
});

describe('tracing off (no OTEL endpoint)', () => {
  let gw: TestGateway;
  beforeEach(async () => (gw = await startTestGateway()));
  afterEach(() => gw.close());

  it('upstream requests carry no traceparent', async () => {
    const { client } = await gw.helloAs('erin');
    await client.call('chat.send', { request_id: 1 });
    await gw.upstream.nextRequest((r) => r.path === '/chat/send');
    expect(gw.upstream.requests.map((r) => [r.path, r.headers.traceparent])).toEqual([
      ['/gateway/authorize_connection', undefined],
      ['/chat/send', undefined],
    ]);
  });
});
