import { TestCluster, startTestCluster } from './harness/cluster';
import { RecordedRequest, Reply } from './harness/fake-upstream';
import { dropConnection, optInProtocols, resumeOf, resumeProtocols } from './harness/resume';
import { WsClient } from './harness/ws-client';
import {
  AUTH_PATH,
  REFRESH_PATH,
  authorize,
  identityHeader,
  inactiveNoticeOf,
  refreshOf,
  userOf,
} from './harness/auth-lifetime';

/** Connect to node `index` of `cluster` and await the hello; the client joins `clients` (closed after the block). */
async function helloOn(cluster: TestCluster, clients: WsClient[], index: number, query: string, protocols: string[]) {
  const client = await WsClient.connect(cluster.nodes[index].wsUrl, { query, protocols });
  clients.push(client);
  return { client, hello: await client.next() };
}

describe('authorization lifetime in cluster mode (SPEC §14)', () => {
  let cluster: TestCluster;
  const refreshReplies = new Map<string, (req: RecordedRequest) => Reply>();
  const clients: WsClient[] = [];

  const hello = (index: number, query: string, protocols: string[]) =>
    helloOn(cluster, clients, index, query, protocols);

  beforeAll(async () => {
    cluster = await startTestCluster(2, { AUTHORIZATION_GRACE: '2s' });
    cluster.upstream.on(`POST ${AUTH_PATH}`, authorize);
    cluster.upstream.on(`POST ${REFRESH_PATH}`, (req) => {
      const user = userOf(req);
      return refreshReplies.get(user)?.(req) ?? { json: { user_id: user }, headers: { 'Gateway-Auth-TTL': '1' } };
    });
  });
  afterAll(async () => {
    await Promise.all(clients.map((client) => client.close()));
    await cluster.close();
  });

  it('a takeover carries the deadline, and only the holder refreshes', async () => {
    const startedAt = Date.now();
    const first = await hello(0, 'user=mover&ttl=2', optInProtocols());
    await dropConnection(first.client);
    const resumed = await hello(1, 'user=mover', resumeProtocols(resumeOf(first.hello).token));
    expect(resumed.hello[1]).toMatchObject({ resumed: true });
    // 90% ±5% of the 2 s lifetime that began on node A, not of a lifetime restarted by the resume.
    await cluster.upstream.nextRequest(refreshOf('mover'), 3000);
    const elapsed = Date.now() - startedAt;
    expect(elapsed).toBeGreaterThanOrEqual(1650);
    expect(elapsed).toBeLessThan(2300);
    // The refresh's answer restarted a 1 s lifetime: the next refresh is the only other one.
    await cluster.upstream.nextRequest(refreshOf('mover'), 2000);
    expect(cluster.upstream.requests.filter(refreshOf('mover'))).toHaveLength(2);
  });

  it('a resume on another node after the lifetime ended refreshes first; refused, it is a normal connect', async () => {
    refreshReplies.set('lapsed', () => ({ status: 401, json: {} }));
    const first = await hello(0, 'user=lapsed&ttl=1', optInProtocols());
    await dropConnection(first.client);
    // Barrier: a 2 s lifetime that began after the drop is refreshed after the first one ended.
    await hello(0, 'user=lapsed-barrier&ttl=2', optInProtocols());
    await cluster.upstream.nextRequest(refreshOf('lapsed-barrier'), 3000);
    expect(cluster.upstream.requests.filter(refreshOf('lapsed'))).toEqual([]);
    const again = await hello(1, 'user=lapsed&again=1', resumeProtocols(resumeOf(first.hello).token));
    expect(cluster.upstream.requests.filter(refreshOf('lapsed'))).toHaveLength(1);
    expect(again.hello[1]).toMatchObject({ resumed: false });
    const late = await hello(0, 'user=lapsed&late=1', resumeProtocols(resumeOf(first.hello).token));
    expect(late.hello[1]).toMatchObject({ resumed: false });
  });

  it('a refusal on the holder ends the session on every node: its token resumes nothing elsewhere', async () => {
    refreshReplies.set('banned', () => ({ status: 403, json: { reason: 'banned' } }));
    const first = await hello(0, 'user=banned&ttl=1', optInProtocols());
    expect(await first.client.next(3000)).toEqual([
      'fatal_error',
      { error_kind: 'http_error', http_error: 403 },
      { reason: 'banned' },
    ]);
    expect(await first.client.closed()).toEqual({ code: 4403, reason: 'expired' });
    const again = await hello(1, 'user=banned&again=1', resumeProtocols(resumeOf(first.hello).token));
    expect(again.hello[1]).toMatchObject({ resumed: false });
  });

  it('a refreshed identity is written to the record: a takeover elsewhere carries it', async () => {
    const changed = { user_id: 'renamed', name: 'New Name' };
    refreshReplies.set('renamed', () => ({ json: changed, headers: { 'Gateway-Auth-TTL': '3600' } }));
    const first = await hello(0, 'user=renamed&ttl=1', optInProtocols());
    expect(await first.client.next(3000)).toEqual(['hello', { refreshed: true }, changed]);
    await dropConnection(first.client);
    const resumed = await hello(1, 'user=renamed', resumeProtocols(resumeOf(first.hello).token));
    expect(resumed.hello).toEqual(['hello', expect.objectContaining({ resumed: true }), changed]);
    expect((await resumed.client.call('chat.who', { request_id: 1 }))[0]).toBe('result');
    const call = await cluster.upstream.nextRequest((r) => r.path === '/chat/who');
    expect(call.headers.authorization).toBe(identityHeader(JSON.stringify(changed)));
  });
});

describe('the inactivity notice after a refresh that changed the object, in cluster mode (SPEC §8, §14)', () => {
  let cluster: TestCluster;
  const changedOf = (user: string) => ({ user_id: user, plan: 'pro' });
  const clients: WsClient[] = [];

  const hello = (index: number, query: string, protocols: string[]) =>
    helloOn(cluster, clients, index, query, protocols);

  beforeAll(async () => {
    cluster = await startTestCluster(2, { NEW_CONNECTION_IDLE_TIMEOUT: '4s' });
    cluster.upstream.on(`POST ${AUTH_PATH}`, authorize);
    // Users named `renewed-…` get a changed object; anyone else the same one.
    cluster.upstream.on(`POST ${REFRESH_PATH}`, (req) => {
      const user = userOf(req);
      return {
        json: user.startsWith('renewed-') ? changedOf(user) : { user_id: user },
        headers: { 'Gateway-Auth-TTL': '3600' },
      };
    });
  });
  afterAll(async () => {
    await Promise.all(clients.map((client) => client.close()));
    await cluster.close();
  });

  // The node that claims the deadline reads the identity from Redis: the refresh wrote it there at once.
  it('carries the new identity after a refresh of a live connection, whichever node claims the deadline', async () => {
    const { client } = await hello(0, 'user=renewed-live&ttl=1', optInProtocols());
    expect(await client.next(3000)).toEqual(['hello', { refreshed: true }, changedOf('renewed-live')]);
    const notice = await cluster.upstream.nextRequest(inactiveNoticeOf('renewed-live'), 5000);
    expect(notice.headers.authorization).toBe(identityHeader(JSON.stringify(changedOf('renewed-live'))));
  });

  it('carries the new identity after a refresh at a resume on another node', async () => {
    const first = await hello(0, 'user=renewed-moved&ttl=1', optInProtocols());
    await dropConnection(first.client);
    // Barrier: a 2 s lifetime that began after the drop is refreshed once the detached one's (1 s) has ended.
    await hello(0, 'user=moved-barrier&ttl=2', optInProtocols());
    await cluster.upstream.nextRequest(refreshOf('moved-barrier'), 3000);
    const resumed = await hello(1, 'user=renewed-moved', resumeProtocols(resumeOf(first.hello).token));
    expect(resumed.hello).toEqual(['hello', expect.objectContaining({ resumed: true }), changedOf('renewed-moved')]);
    const notice = await cluster.upstream.nextRequest(inactiveNoticeOf('renewed-moved'), 4000);
    expect(notice.headers.authorization).toBe(identityHeader(JSON.stringify(changedOf('renewed-moved'))));
  });
});
