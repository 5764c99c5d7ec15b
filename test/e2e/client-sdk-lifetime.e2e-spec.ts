import { RecordedRequest } from './harness/fake-upstream';
import { TestGateway, startTestGateway } from './harness/gateway';
import { SdkClients, nextEvent } from './harness/sdk-client';

/**
 * The client SDK's side of SPEC §14 against the real gateway: `refreshed`
 * with the new identity; a close `expired` is followed by one normal
 * connect (no resume offer), and a refusal of that connect stops the client.
 */
const AUTH = '/gateway/authorize_connection';
const REFRESH = '/gateway/refresh_connection';

describe('client SDK: authorization lifetime (SPEC §14)', () => {
  const sdk = new SdkClients();
  let t: TestGateway;

  beforeEach(async () => (t = await startTestGateway({ AUTHORIZATION_TTL: '1s' })));
  afterEach(async () => {
    sdk.closeAll();
    await t.close();
  });

  const authRequests = (): RecordedRequest[] => t.upstream.requests.filter((r) => r.path === AUTH);

  it('emits refreshed with the changed identity', async () => {
    t.upstream.on(`POST ${REFRESH}`, {
      json: { user_id: 'u1', name: 'Renamed' },
      headers: { 'Gateway-Auth-TTL': '3600' },
    });
    const client = sdk.create(t.wsUrl + '/?user=u1');
    await client.connect();
    const [hello] = await nextEvent(client, 'refreshed', 3000);
    expect(hello).toEqual({ user_id: 'u1', name: 'Renamed' });
    expect(client.hello).toEqual(hello);
  });

  it('after an expiry it connects once without a resume offer; refused, it stops', async () => {
    t.upstream.on(`POST ${REFRESH}`, { status: 401, json: {} });
    let authorizations = 0;
    t.upstream.on(`POST ${AUTH}`, () =>
      ++authorizations <= 2 ? { json: { user_id: 'u1' } } : { status: 403, json: {} },
    );
    const client = sdk.create(t.wsUrl + '/?user=u1');
    await client.connect();
    const [expired] = await nextEvent(client, 'disconnect', 3000);
    expect(expired).toMatchObject({ code: 4401, reason: 'expired', retryInMs: 0 });
    await nextEvent(client, 'hello', 3000);
    expect(authRequests()).toHaveLength(2);
    // The reconnect offered no token: a normal connect (its authorization request is the proof).
    // Expired again after that hello: one more connect, which the backend refuses (403): the client stops.
    const [refused] = await nextEvent(client, 'disconnect', 3000);
    expect(refused).toMatchObject({ code: 4401, reason: 'expired', retryInMs: 0 });
    const [final] = await nextEvent(client, 'disconnect', 3000);
    expect(final).toMatchObject({ code: 4403, reason: 'backend_error', retryInMs: null });
    expect(client.status).toBe('closed');
    expect(authRequests()).toHaveLength(3);
  });
});
