import { FakeUpstream } from './fake-upstream';
import { api } from './http';

/** `/v1` calls a spec expects to succeed, and what the upstream saw of a connection. */

/** A `/v1` PUT (subscribe, attach, watch) that must answer 204 with no body; a failure names the path. */
export async function expectPut(apiUrl: string, path: string, body?: unknown): Promise<void> {
  const res = await api(apiUrl, 'PUT', path, body);
  expect([path, res.status, res.text]).toEqual([path, 204, '']);
}

/** POST /v1/publish/<topic> with `payload` as JSON, which must answer 204 with no body. */
export async function expectPublish(apiUrl: string, topic: string, payload: unknown): Promise<void> {
  const res = await api(apiUrl, 'POST', `/v1/publish/${topic}`, JSON.stringify(payload));
  expect([topic, res.status, res.text]).toEqual([topic, 204, '']);
}

/** The connection id of the next authorization the upstream saw (of the handshake with query `query`, when given). */
export async function connectionIdOf(upstream: FakeUpstream, query?: string, ms?: number): Promise<string> {
  const auth = await upstream.nextRequest(
    (r) =>
      r.path.endsWith('/gateway/authorize_connection') &&
      (query === undefined ||
        (r.body as [unknown, unknown, { url_querystring: string }])[2]?.url_querystring === query),
    ms,
  );
  return (auth.body as [{ connection_id: string }])[0].connection_id;
}
