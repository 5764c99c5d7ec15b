import Redis from 'ioredis';
import { ClusterNames } from '../../src/cluster/channels';
import { TOPOLOGIES, TEST_REDIS_URL, TestCluster, startTestCluster } from './harness/cluster';
import { TestGateway, startTestGateway } from './harness/gateway';
import { api } from './harness/http';
import { optInProtocols } from './harness/resume';
import { connectionIdOf, expectPut } from './harness/v1';
import { WsClient } from './harness/ws-client';
import { deferred, waitFor } from './harness/wait';

/** Resumable sessions on (so sessions can be detached and topics have a history). */
const ENV = { RESUME_WINDOW: '30s' };

interface Page {
  cursor: string | null;
  [key: string]: unknown;
}

/** GET `path` on `baseUrl`, expecting 200; its JSON. */
async function query(baseUrl: string, path: string): Promise<Page> {
  const res = await api(baseUrl, 'GET', path);
  expect([path, res.status]).toEqual([path, 200]);
  return res.json() as Page;
}

/** Every page of a paged list (`field`) at `path` with `limit`, following the cursor. */
async function allPages(baseUrl: string, path: string, field: string, limit: number): Promise<unknown[][]> {
  const pages: unknown[][] = [];
  let cursor: string | null = null;
  do {
    const sep = path.includes('?') ? '&' : '?';
    const page = await query(baseUrl, `${path}${sep}limit=${limit}${cursor === null ? '' : `&cursor=${cursor}`}`);
    pages.push(page[field] as unknown[]);
    cursor = page.cursor;
  } while (cursor !== null && pages.length < 100);
  return pages;
}

describe.each(TOPOLOGIES)('GET queries, SPEC §15.2 (%s)', (topology, startGateway) => {
  let t: TestGateway;
  let nodeId: string;
  beforeAll(async () => {
    t = await startGateway(ENV);
    const info = await query(t.apiUrl, '/v1/info');
    nodeId = topology === 'one node' ? (info.nodes as Array<{ node_id: string }>)[0].node_id : 'nodeA';
  });
  afterAll(() => t.close());

  describe('GET /v1/connection/{conn_id}', () => {
    it('answers the connection: user, node, state, topics, lattices and users watch (path form)', async () => {
      const { cid } = await t.helloAs('q-conn');
      await api(t.apiUrl, 'PUT', `/v1/connection/${cid}/subscriptions/room/1`);
      await api(t.apiUrl, 'PUT', `/v1/connection/${cid}/lattices/docs/a`, { shared: { k: { n_counter: 1 } } });
      expect(await query(t.apiUrl, `/v1/connection/${cid}`)).toEqual({
        connection_id: cid,
        user_id: 'q-conn',
        node: nodeId,
        state: 'attached',
        topics: ['room/1'],
        lattices: ['docs/a'],
        watches_users: false,
      });
      await api(t.apiUrl, 'PUT', `/v1/connection/${cid}/users`, ['someone']);
      expect((await query(t.apiUrl, `/v1/connection/${cid}`)).watches_users).toBe(true);
    });

    it('answers "connecting" with a null user_id while the authorization is pending', async () => {
      const gate = deferred();
      t.upstream.on('POST /gateway/authorize_connection', async () => {
        await gate.promise;
        return { json: { user_id: 'late' } };
      });
      await t.connect({ query: 'pending=1' });
      const cid = await t.connectionIdOf('pending=1');
      const answer = await query(t.apiUrl, `/v1/connection/${cid}`);
      gate.resolve();
      expect([answer.state, answer.user_id]).toEqual(['connecting', null]);
      t.upstream.on('POST /gateway/authorize_connection', (req) => {
        const kwargs = (req.body as [unknown, unknown, { url_querystring: string }])[2];
        return { json: { user_id: new URLSearchParams(kwargs.url_querystring).get('user') ?? 'u1' } };
      });
    });

    it('answers "detached" for a resumable session whose socket dropped, still counted as a subscriber of its topic', async () => {
      const { client } = await t.hello({ query: 'user=q-detach', protocols: optInProtocols() });
      const cid = await t.connectionIdOf('user=q-detach');
      await api(t.apiUrl, 'PUT', `/v1/connection/${cid}/subscriptions/q/detached`);
      client.socket.terminate();
      let state = '';
      await waitFor(
        async () => (state = (await query(t.apiUrl, `/v1/connection/${cid}`)).state as string) === 'detached',
        () => `connection ${cid} to read state detached (last ${state})`,
        3000,
        20,
      );
      expect(state).toBe('detached');
      expect(await query(t.apiUrl, '/v1/topic/q/detached')).toMatchObject({ subscribers: 1, users: 1 });
    });

    it('answers 404 {"error": "unknown_connection"} for a well-formed unknown id, 404 empty for a malformed one', async () => {
      const unknown = await api(t.apiUrl, 'GET', '/v1/connection/nodeA-AAAAAAAAAAAAAAAAAAAAAAAA');
      expect([unknown.status, unknown.json()]).toEqual([404, { error: 'unknown_connection' }]);
      for (const path of ['/v1/connection/a.b', `/v1/connection/${'x'.repeat(65)}`, '/v1/connection/a%20b']) {
        const res = await api(t.apiUrl, 'GET', path);
        expect([path, res.status, res.text]).toEqual([path, 404, '']);
      }
    });
  });

  describe('GET /v1/user/{user_id}/connections', () => {
    it("lists the user's connections with node and state, and its status", async () => {
      const first = await t.helloAs('q-user');
      const second = await t.helloAs('q-user', 'user=q-user&n=2');
      const answer = await query(t.apiUrl, '/v1/user/q-user/connections');
      expect(answer).toEqual({
        user_id: 'q-user',
        status: 'active',
        connections: expect.arrayContaining([
          { connection_id: first.cid, node: nodeId, state: 'attached' },
          { connection_id: second.cid, node: nodeId, state: 'attached' },
        ]),
        cursor: null,
      });
      expect(answer.connections).toHaveLength(2);
    });

    it('answers offline and no connections for an unknown user; 404 for a malformed user id', async () => {
      expect(await query(t.apiUrl, '/v1/user/nobody/here/connections')).toEqual({
        user_id: 'nobody/here',
        status: 'offline',
        connections: [],
        cursor: null,
      });
      expect((await api(t.apiUrl, 'GET', '/v1/user/a.b/connections')).status).toBe(404);
      expect((await api(t.apiUrl, 'GET', `/v1/user/${'u'.repeat(257)}/connections`)).status).toBe(404);
    });

    it('pages with limit and an opaque cursor: every connection once', async () => {
      const cids: string[] = [];
      for (let i = 0; i < 5; i++) cids.push((await t.helloAs('q-pages', `user=q-pages&i=${i}`)).cid);
      const pages = await allPages(t.apiUrl, '/v1/user/q-pages/connections', 'connections', 2);
      expect(pages.map((page) => page.length)).toEqual([2, 2, 1]);
      const listed = pages.flat().map((entry) => (entry as { connection_id: string }).connection_id);
      expect(listed.sort()).toEqual([...cids].sort());
    });

    it.each([
      ['limit=0', 'invalid_limit'],
      ['limit=1001', 'invalid_limit'],
      ['limit=ten', 'invalid_limit'],
      ['limit=1.5', 'invalid_limit'],
      ['limit=', 'invalid_limit'],
      ['cursor=not-a-cursor', 'invalid_cursor'],
      ['cursor=', 'invalid_cursor'],
    ])('answers 400 for %s', async (params, error) => {
      const res = await api(t.apiUrl, 'GET', `/v1/user/u1/connections?${params}`);
      expect([res.status, (res.json() as { error: string }).error]).toEqual([400, error]);
      expect(typeof (res.json() as { message: string }).message).toBe('string');
    });

    it('accepts limit=1 and limit=1000', async () => {
      for (const limit of [1, 1000]) await query(t.apiUrl, `/v1/user/u1/connections?limit=${limit}`);
    });
  });

  describe('GET /v1/topic/{topic}', () => {
    it('counts subscribers and users; pages connection ids with ?connections=1', async () => {
      const a = await t.helloAs('q-topic-a');
      const b = await t.helloAs('q-topic-a', 'user=q-topic-a&n=2');
      const c = await t.helloAs('q-topic-b');
      for (const { cid } of [a, b, c]) await api(t.apiUrl, 'PUT', `/v1/connection/${cid}/subscriptions/q/topic`);
      expect(await query(t.apiUrl, '/v1/topic/q/topic')).toEqual({
        topic: 'q/topic',
        subscribers: 3,
        users: 2,
        history: { epoch: null, offset: 0, kept: 0 },
      });
      const pages = await allPages(t.apiUrl, '/v1/topic/q/topic?connections=1', 'connection_ids', 2);
      expect(pages.map((page) => page.length)).toEqual([2, 1]);
      expect((pages.flat() as string[]).sort()).toEqual([a.cid, b.cid, c.cid].sort());
    });

    it('reports the history of a topic with a resumable subscriber', async () => {
      await t.hello({ query: 'user=q-hist', protocols: optInProtocols() });
      const cid = await t.connectionIdOf('user=q-hist');
      await api(t.apiUrl, 'PUT', `/v1/connection/${cid}/subscriptions/q/hist`);
      for (let i = 0; i < 3; i++) await api(t.apiUrl, 'POST', '/v1/publish/q/hist', i);
      const history = (await query(t.apiUrl, '/v1/topic/q/hist')).history as Record<string, unknown>;
      expect(history).toEqual({ epoch: expect.any(String), offset: 3, kept: 3 });
    });

    it('answers zero for a topic nobody subscribes to; 404 for a malformed topic', async () => {
      expect(await query(t.apiUrl, '/v1/topic/nobody')).toEqual({
        topic: 'nobody',
        subscribers: 0,
        users: 0,
        history: { epoch: null, offset: 0, kept: 0 },
      });
      for (const path of ['/v1/topic/a.b', `/v1/topic/${'t'.repeat(257)}`, '/v1/topic/a//b'])
        expect([path, (await api(t.apiUrl, 'GET', path)).status]).toEqual([path, 404]);
      for (const params of ['connections=1&limit=0', 'limit=2000', 'connections=1&cursor=x'])
        expect([params, (await api(t.apiUrl, 'GET', `/v1/topic/t?${params}`)).status]).toEqual([params, 400]);
    });
  });

  describe('GET /v1/info', () => {
    it('lists every node with its kept counters', async () => {
      const nodes = (await query(t.apiUrl, '/v1/info')).nodes as Array<Record<string, unknown>>;
      expect(nodes).toHaveLength(topology === 'one node' ? 1 : 2);
      for (const node of nodes) {
        expect(node).toEqual({
          node_id: expect.any(String),
          connections: expect.any(Number),
          detached: expect.any(Number),
          topics: expect.any(Number),
          namespaces: expect.any(Number),
          version: expect.stringMatching(/^\d+\.\d+\.\d+/),
          uptime_s: expect.any(Number),
        });
      }
      const here = nodes.find((node) => node.node_id === nodeId)!;
      expect(here.connections).toBeGreaterThan(0);
      expect(here.topics).toBeGreaterThan(0);
      expect(here.namespaces).toBeGreaterThan(0);
    });
  });

  it('refuses a GET command inside /v1/batch (400)', async () => {
    const res = await api(t.apiUrl, 'POST', '/v1/batch', { commands: [{ method: 'GET', path: '/v1/info' }] });
    expect([res.status, (res.json() as { error: string }).error]).toEqual([400, 'invalid_batch']);
  });

  it('counts the queries by endpoint in gateway_backend_api_requests_total', async () => {
    await api(t.apiUrl, 'GET', '/v1/info');
    const text = await (await fetch(t.apiUrl + '/metrics')).text();
    for (const endpoint of ['connection_query', 'user_connections_query', 'topic_query', 'info_query'])
      expect(text).toMatch(
        new RegExp(`^gateway_backend_api_requests_total\\{endpoint="${endpoint}",status="200"\\}`, 'm'),
      );
  });
});

describe('GET queries need the bearer token as /v1 does', () => {
  it('answers 401 without it and 200 with it', async () => {
    const t = await startTestGateway({ BACKEND_API_TOKEN: 'query-token-123456' });
    try {
      expect((await api(t.apiUrl, 'GET', '/v1/info')).status).toBe(401);
      const res = await api(t.apiUrl, 'GET', '/v1/info', undefined, { Authorization: 'Bearer query-token-123456' });
      expect(res.status).toBe(200);
    } finally {
      await t.close();
    }
  });
});

describe('GET queries across a cluster (SPEC §15.2, two nodes)', () => {
  let cluster: TestCluster;
  beforeAll(async () => (cluster = await startTestCluster(2, ENV)));
  afterAll(() => cluster.close());

  it("lists a user's connections on every node, asked through either node, and pages across nodes", async () => {
    const [a, b] = cluster.nodes;
    const onA = await a.helloAs('q-both', 'user=q-both&n=1');
    const onA2 = await a.helloAs('q-both', 'user=q-both&n=2');
    const onB = await b.helloAs('q-both', 'user=q-both&n=3');
    for (const node of [a, b]) {
      const pages = await allPages(node.apiUrl, '/v1/user/q-both/connections', 'connections', 2);
      expect(pages.map((page) => page.length)).toEqual([2, 1]);
      expect(pages.flat()).toEqual(
        expect.arrayContaining([
          { connection_id: onA.cid, node: 'nodeA', state: 'attached' },
          { connection_id: onA2.cid, node: 'nodeA', state: 'attached' },
          { connection_id: onB.cid, node: 'nodeB', state: 'attached' },
        ]),
      );
    }
    expect(await query(b.apiUrl, `/v1/connection/${onA.cid}`)).toMatchObject({ node: 'nodeA', user_id: 'q-both' });
    for (const { cid } of [onA, onB]) await api(a.apiUrl, 'PUT', `/v1/connection/${cid}/subscriptions/both`);
    expect(await query(b.apiUrl, '/v1/topic/both')).toMatchObject({ subscribers: 2, users: 1 });
  });

  it('lists a live node that does not answer in "unreachable" and still answers 200 within the 2 s budget', async () => {
    const [a] = cluster.nodes;
    const redis = new Redis(TEST_REDIS_URL);
    const names = new ClusterNames(cluster.prefix);
    try {
      // A node registered as alive that never answers (it listens to nothing).
      await redis.sadd(names.nodes, 'nodeGhost');
      await redis.set(names.alive('nodeGhost'), 'x', 'PX', 30_000);
      const startedAt = Date.now();
      const [info, user, connection] = await Promise.all([
        query(a.apiUrl, '/v1/info'),
        query(a.apiUrl, '/v1/user/nobody/connections'),
        api(a.apiUrl, 'GET', '/v1/connection/nodeGhost-AAAAAAAAAAAAAAAAAAAAAA'),
      ]);
      const elapsedMs = Date.now() - startedAt;
      expect(info.unreachable).toEqual(['nodeGhost']);
      expect((info.nodes as Array<{ node_id: string }>).map((node) => node.node_id).sort()).toEqual(['nodeA', 'nodeB']);
      expect(elapsedMs).toBeGreaterThanOrEqual(1900);
      expect(elapsedMs).toBeLessThan(2600);
      expect(user).toEqual({
        user_id: 'nobody',
        status: 'offline',
        connections: [],
        cursor: null,
        unreachable: ['nodeGhost'],
      });
      // The silent node may hold it: still 404, naming the node.
      expect([connection.status, connection.json()]).toEqual([
        404,
        { error: 'unknown_connection', unreachable: ['nodeGhost'] },
      ]);
    } finally {
      await redis.del(names.alive('nodeGhost'));
      await redis.srem(names.nodes, 'nodeGhost');
      redis.disconnect();
    }
  });
});

describe('GET queries see sessions held by no node (SPEC §15.2 "detached", §12.5)', () => {
  let cluster: TestCluster;
  beforeAll(async () => (cluster = await startTestCluster(2, ENV)));
  afterAll(() => cluster.close());

  it('a resumable session whose node drained answers "detached" with no node, and is listed under its user', async () => {
    const [a, b] = cluster.nodes;
    const { client } = await WsClient.hello(a.wsUrl, { query: 'user=q-orphan', protocols: optInProtocols() });
    const cid = await connectionIdOf(cluster.upstream, 'user=q-orphan');
    await expectPut(b.apiUrl, `/v1/connection/${cid}/subscriptions/orph/t`);
    await expectPut(b.apiUrl, `/v1/connection/${cid}/lattices/orph/ns`, {});
    await expectPut(b.apiUrl, `/v1/connection/${cid}/users`, ['ann']);
    await a.close(); // drain: the session is detached and held by no node until resumed or its window ends
    await client.closed(5000);
    expect(await query(b.apiUrl, `/v1/connection/${cid}`)).toEqual({
      connection_id: cid,
      user_id: 'q-orphan',
      node: null,
      state: 'detached',
      topics: ['orph/t'],
      lattices: ['orph/ns'],
      watches_users: true,
    });
    expect(await query(b.apiUrl, '/v1/user/q-orphan/connections')).toEqual({
      user_id: 'q-orphan',
      status: 'active',
      connections: [{ connection_id: cid, node: null, state: 'detached' }],
      cursor: null,
    });
  });
});
