import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { TestGateway, startTestGateway } from './harness/gateway';
import { untilMetric } from './harness/metrics';
import { optInProtocols } from './harness/resume';

interface ChatBackendOptions {
  port: number;
  host: string;
  apiUrl: () => string;
  authTtlSeconds?: number;
  isAllowed?: (user: string) => boolean;
}

// The demo backend is plain JavaScript (examples/), loaded as `npm run demo` loads it.
const { startChatBackend } = require('../../examples/chat-backend') as {
  startChatBackend: (options: ChatBackendOptions) => Promise<Server>;
};

/** The example chat backend's gateway.refresh_connection (SPEC §14), through the real gateway. */
describe('demo chat backend: authorization lifetime', () => {
  let t: TestGateway;
  let backend: Server;
  const signedOut = new Set<string>();

  beforeAll(async () => {
    let apiUrl = '';
    const isAllowed = (user: string): boolean => !signedOut.has(user);
    backend = await startChatBackend({
      port: 0,
      host: '127.0.0.1',
      apiUrl: () => apiUrl,
      authTtlSeconds: 1,
      isAllowed,
    });
    t = await startTestGateway({ UPSTREAM_URL: `http://127.0.0.1:${(backend.address() as AddressInfo).port}` });
    apiUrl = t.apiUrl;
  });
  afterAll(async () => {
    await t.close();
    await new Promise((resolve) => backend.close(resolve));
  });

  it('renews the authorization while the user may go on, and ends it (401, expired) once signed out', async () => {
    const { client } = await t.hello({ query: 'user=alice' });
    // Each renewal names its new end (expires_at), so the object changed: a legacy client gets no frame for it.
    await untilMetric(t.apiUrl, 'gateway_auth_refreshes_total{result="changed"}', (n) => n >= 1, 3000);
    signedOut.add('alice');
    expect(await client.next(3000)).toEqual([
      'fatal_error',
      { error_kind: 'http_error', http_error: 401 },
      { error: 'signed out' },
    ]);
    expect(await client.closed()).toEqual({ code: 4401, reason: 'expired' });
    expect(client.frames.map((frame) => frame[0])).toEqual(['hello', 'fatal_error']);
  });

  it('a renewal names its new end: a resumable client gets hello {refreshed} with the later expires_at', async () => {
    const startedAt = Date.now();
    const { client, hello } = await t.hello({ query: 'user=bob', protocols: optInProtocols() });
    const first = hello[2] as { user_id: string; username: string; expires_at: number };
    expect(first).toEqual({ user_id: 'bob', username: 'bob', expires_at: expect.any(Number) as number });
    // A 1 s lifetime.
    expect(first.expires_at).toBeGreaterThanOrEqual(startedAt + 1000);
    expect(first.expires_at).toBeLessThanOrEqual(Date.now() + 1000);
    const refreshed = await client.next(3000);
    expect(refreshed).toEqual([
      'hello',
      { refreshed: true },
      { user_id: 'bob', username: 'bob', expires_at: expect.any(Number) as number },
    ]);
    expect((refreshed[2] as { expires_at: number }).expires_at).toBeGreaterThan(first.expires_at);
  });
});
