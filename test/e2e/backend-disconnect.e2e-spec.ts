import { TOPOLOGIES, TestCluster, startTestCluster } from './harness/cluster';
import { TestGateway } from './harness/gateway';
import { ApiResponse, api } from './harness/http';
import { scrapeMetrics } from './harness/metrics';
import { deferred } from './harness/wait';
import { Frame, WsClient } from './harness/ws-client';
import { expectNothingMore } from './harness/barrier';

/**
 * SPEC §12.6: the backend ends connections. `DELETE /v1/connection/{cid}`
 * and `DELETE /v1/user/{uid}/connections` close with 4403 `disconnected`;
 * the 204 comes once the owner node has removed the connection (§11 read
 * your writes), in a batch too, with /v1 on the client's node or another.
 */

const AUTH_PATH = '/gateway/authorize_connection';
const DISCONNECTED = { code: 4403, reason: 'disconnected' };

type Statuses = Record<string, { status_register: [number, string] }>;

describe.each(TOPOLOGIES)('backend disconnect (SPEC §12.6, %s)', (_topology, start) => {
  let t: TestGateway;

  // A short activity window: a watched user goes inactive on its own, and its last connection then closing shows offline (SPEC §8).
  beforeEach(async () => (t = await start({ MAX_PAYLOAD_BYTES: '1KiB', NEW_CONNECTION_IDLE_TIMEOUT: '300ms' })));
  afterEach(() => t.close());

  const call = (method: string, path: string, body?: unknown): Promise<ApiResponse> =>
    api(t.apiUrl, method, path, body);

  async function expectNoContent(method: string, path: string): Promise<void> {
    const res = await call(method, path);
    expect({ path, status: res.status, text: res.text }).toEqual({ path, status: 204, text: '' });
  }

  function statusesOf(frame: Frame): Statuses {
    expect(frame.slice(0, 2)).toEqual(['lattice', { namespace: 'gateway.user' }]);
    return frame[2] as Statuses;
  }

  describe('DELETE /v1/connection/{conn_id}', () => {
    it('closes that connection with 4403 disconnected, and it has left the gateway when the 204 arrives', async () => {
      const first = await t.helloAs('alice', 'user=alice&n=1');
      const second = await t.helloAs('alice', 'user=alice&n=2');
      expect(await t.openConnections()).toBe(2);
      await expectNoContent('DELETE', `/v1/connection/${first.cid}`);
      // Read your writes (SPEC §11): counted out on the owner node before the answer.
      expect(await t.openConnections()).toBe(1);
      expect(await first.client.closed()).toEqual(DISCONNECTED);
      expect(first.client.frames.map((f) => f[0])).toEqual(['hello']);
      await expectNothingMore(second.client);
    });

    it('ends the connection for presence: watchers of an inactive user see it offline at once', async () => {
      const bob = await t.helloAs('bob');
      const { watcher, snapshot } = await watchingWith(['bob']);
      await untilInactive(watcher, snapshot, 'bob');
      await expectNoContent('DELETE', `/v1/connection/${bob.cid}`);
      expect(statusesOf(await watcher.next()).bob.status_register[1]).toBe('offline');
      expect(await bob.client.closed()).toEqual(DISCONNECTED);
    });

    it('closes a connection still awaiting authorization with 4403: it never gets hello', async () => {
      const release = deferred();
      t.upstream.on(`POST ${AUTH_PATH}`, async (req) => {
        const query = (req.body as [unknown, unknown, { url_querystring: string }])[2].url_querystring;
        if (query === 'user=slow') await release.promise;
        return { json: { user_id: new URLSearchParams(query).get('user') } };
      });
      const slow = await t.connect({ query: 'user=slow' });
      const cid = await t.connectionIdOf('user=slow');
      await expectNoContent('DELETE', `/v1/connection/${cid}`);
      expect(await t.openConnections()).toBe(0);
      expect(await slow.closed()).toEqual(DISCONNECTED);
      release.resolve();
      // The held authorization answer is ignored: a later connection greets first and the slow one got nothing.
      await expectNothingMore((await t.helloAs('barrier')).client);
      expect(slow.frames).toEqual([]);
      expect(await t.openConnections()).toBe(1);
    });

    it('answers 204 to unknown, forged, foreign-node and already closed ids, and closes nothing', async () => {
      const alice = await t.helloAs('alice');
      const node = alice.cid.slice(0, alice.cid.indexOf('-'));
      for (const cid of [
        'Zz_unknown-cid',
        `${node}-AAAAAAAAAAAAAAAAAAAAAA`,
        'nodeZ-AAAAAAAAAAAAAAAAAAAAAA',
        'a'.repeat(64),
      ]) {
        await expectNoContent('DELETE', `/v1/connection/${cid}`);
      }
      await expectNothingMore(alice.client);
      await expectNoContent('DELETE', `/v1/connection/${alice.cid}`);
      await expectNoContent('DELETE', `/v1/connection/${alice.cid}`);
      expect(await alice.client.closed()).toEqual(DISCONNECTED);
    });

    it.each([
      ['a 65-character conn_id', `/v1/connection/${'a'.repeat(65)}`],
      ['a dot in the conn_id', '/v1/connection/a.b'],
      ['a trailing slash', '/v1/connection/abc/'],
      ['no conn_id', '/v1/connection/'],
    ])('answers 404 with an empty body to %s', async (_what, path) => {
      const res = await call('DELETE', path);
      expect({ status: res.status, text: res.text }).toEqual({ status: 404, text: '' });
    });

    it('refuses a body (400) and an oversized one (413), and closes nothing then', async () => {
      const alice = await t.helloAs('alice');
      const withBody = await call('DELETE', `/v1/connection/${alice.cid}`, {});
      expect(withBody.status).toBe(400);
      expect(Object.keys(withBody.json() as object).sort()).toEqual(['error', 'message']);
      const oversized = await call('DELETE', `/v1/connection/${alice.cid}`, JSON.stringify({ text: 'x'.repeat(2048) }));
      expect({ status: oversized.status, connection: oversized.headers.get('connection') }).toEqual({
        status: 413,
        connection: 'close',
      });
      await expectNothingMore(alice.client);
    });
  });

  describe('DELETE /v1/user/{user_id}/connections', () => {
    it("closes every connection of that user with 4403, and no other user's", async () => {
      const alice1 = await t.helloAs('alice', 'user=alice&n=1');
      const alice2 = await t.helloAs('alice', 'user=alice&n=2');
      const bob = await t.helloAs('bob');
      const { watcher, snapshot } = await watchingWith(['alice']);
      await untilInactive(watcher, snapshot, 'alice');
      expect(await t.openConnections()).toBe(4);
      await expectNoContent('DELETE', '/v1/user/alice/connections');
      expect(await t.openConnections()).toBe(2);
      expect(await alice1.client.closed()).toEqual(DISCONNECTED);
      expect(await alice2.client.closed()).toEqual(DISCONNECTED);
      expect(statusesOf(await watcher.next()).alice.status_register[1]).toBe('offline');
      await expectNothingMore(bob.client);
      await expectNothingMore(watcher);
    });

    it('reaches user ids with slashes and colons, and answers 204 to a user without connections', async () => {
      const odd = await t.helloAs('team:a/b-c_d', 'user=team:a/b-c_d');
      const other = await t.helloAs('team:a');
      await expectNoContent('DELETE', '/v1/user/nobody/connections');
      await expectNoContent('DELETE', '/v1/user/team:a/b-c_d/connections');
      expect(await odd.client.closed()).toEqual(DISCONNECTED);
      await expectNothingMore(other.client);
    });

    it.each([
      ['a dot in the user id', '/v1/user/a.b/connections'],
      ['an empty user id', '/v1/user//connections'],
      ['a trailing slash', '/v1/user/alice/connections/'],
      ['a 257-character user id', `/v1/user/${'u'.repeat(257)}/connections`],
      ['the plural path', '/v1/users/alice/connections'],
    ])('answers 404 with an empty body to %s', async (_what, path) => {
      const res = await call('DELETE', path);
      expect({ status: res.status, text: res.text }).toEqual({ status: 404, text: '' });
    });
  });

  it('runs both as /v1/batch commands, each with the status of the single endpoint', async () => {
    const alice = await t.helloAs('alice');
    const bob1 = await t.helloAs('bob', 'user=bob&n=1');
    const bob2 = await t.helloAs('bob', 'user=bob&n=2');
    const carol = await t.helloAs('carol');
    const res = await call('POST', '/v1/batch', {
      commands: [
        { method: 'DELETE', path: `/v1/connection/${alice.cid}` },
        { method: 'DELETE', path: '/v1/user/bob/connections' },
        { method: 'DELETE', path: '/v1/connection/a.b' },
        { method: 'DELETE', path: `/v1/connection/${carol.cid}`, body: {} },
        { method: 'DELETE', path: '/v1/connection/Zz_unknown-cid' },
      ],
    });
    expect(res.status).toBe(200);
    const { results } = res.json() as { results: Array<Record<string, unknown>> };
    expect(results).toEqual([
      { status: 204 },
      { status: 204 },
      { status: 404 },
      { status: 400, error: expect.any(String), message: expect.any(String) },
      { status: 204 },
    ]);
    expect(await t.openConnections()).toBe(1);
    for (const client of [alice.client, bob1.client, bob2.client]) expect(await client.closed()).toEqual(DISCONNECTED);
    await expectNothingMore(carol.client);
  });

  it('counts the requests as connection_disconnect and user_disconnect in gateway_backend_api_requests_total', async () => {
    await expectNoContent('DELETE', '/v1/connection/Zz_unknown-cid');
    await expectNoContent('DELETE', '/v1/user/nobody/connections');
    expect((await call('DELETE', '/v1/connection/a.b')).status).toBe(404);
    const metrics = await scrapeMetrics(t.apiUrl);
    expect({
      connection204: metrics.value('gateway_backend_api_requests_total{endpoint="connection_disconnect",status="204"}'),
      connection404: metrics.value('gateway_backend_api_requests_total{endpoint="connection_disconnect",status="404"}'),
      user204: metrics.value('gateway_backend_api_requests_total{endpoint="user_disconnect",status="204"}'),
    }).toEqual({ connection204: 1, connection404: 1, user204: 1 });
  });

  /** A connection of user `watcher` watching `users`, and the statuses of its snapshot. */
  async function watchingWith(users: string[]): Promise<{ watcher: WsClient; snapshot: Statuses }> {
    const watcher = await t.helloAs('watcher');
    expect((await call('PUT', `/v1/connection/${watcher.cid}/users`, users)).status).toBe(204);
    const snapshot = statusesOf(await watcher.client.next());
    expect(Object.keys(snapshot).sort()).toEqual([...users].sort());
    return { watcher: watcher.client, snapshot };
  }

  /** Read the watcher's status pushes until `user` is inactive (its connections stay open; SPEC §8). */
  async function untilInactive(watcher: WsClient, snapshot: Statuses, user: string): Promise<void> {
    let status = snapshot[user].status_register[1];
    while (status !== 'inactive') {
      const pushed = statusesOf(await watcher.next(5000))[user];
      if (pushed !== undefined) status = pushed.status_register[1];
    }
  }
});

describe('backend disconnect across a cluster (SPEC §12.6, §11)', () => {
  let cluster: TestCluster;
  beforeEach(async () => (cluster = await startTestCluster(2)));
  afterEach(() => cluster.close());

  it("closes a user's connections on every node, and no other user's, before the 204", async () => {
    const [a, b] = cluster.nodes;
    const onA = await a.helloAs('alice', 'user=alice&node=a');
    const onB = await b.helloAs('alice', 'user=alice&node=b');
    const bob = await b.helloAs('bob');
    const res = await api(a.apiUrl, 'DELETE', '/v1/user/alice/connections');
    expect({ status: res.status, text: res.text }).toEqual({ status: 204, text: '' });
    // Read your writes: both nodes have removed alice's connections when the 204 arrives.
    expect({ a: await a.openConnections(), b: await b.openConnections() }).toEqual({ a: 0, b: 1 });
    expect(await onA.client.closed()).toEqual(DISCONNECTED);
    expect(await onB.client.closed()).toEqual(DISCONNECTED);
    expect(await bob.client.call('test.barrier', { request_id: 1 })).toEqual([
      'result',
      { request_id: 1 },
      { args: [], kwargs: {} },
    ]);
  });
});
