import Redis from 'ioredis';
import { ClusterNames } from '../../src/cluster/channels';
import { TEST_REDIS_URL, TestCluster, startTestCluster } from './harness/cluster';
import { topologyRedis } from './harness/topology-redis';
import { api } from './harness/http';
import { Frame, WsClient } from './harness/ws-client';

/** SPEC §11 "Lattices are durable": updates through any node, subscribers on any node. */
describe('cluster: lattices across nodes (SPEC §11)', () => {
  let cluster: TestCluster;
  beforeEach(async () => (cluster = await startTestCluster(3)));
  afterEach(() => cluster.close());

  async function call(apiUrl: string, method: string, path: string, body?: unknown): Promise<void> {
    const res = await api(apiUrl, method, path, body);
    expect([method, path, res.status, res.text]).toEqual([method, path, 204, '']);
  }

  const lattice = (data: unknown, namespace = 'chat'): Frame => ['lattice', { namespace }, data] as Frame;

  /**
   * "Nothing more arrives" across nodes: a later update of the same namespace
   * is applied in log order, so the barrier key must be the next frame.
   */
  async function expectNothingMoreThan(client: WsClient, user: string, apiUrl: string): Promise<void> {
    await call(apiUrl, 'POST', '/v1/lattice/chat', { private: { [user]: { barrier: { n_counter: Date.now() } } } });
    const frame = await client.next();
    expect(Object.keys(frame[2] as object)).toEqual(['barrier']);
  }

  /** A shared counter of key `room` of namespace `chat` that reaches the log but whose message is lost (no PUBLISH). */
  async function appendWithoutMessage(name: string, value: number): Promise<void> {
    const redis = topologyRedis();
    try {
      const base = new ClusterNames(cluster.prefix).lattice('chat');
      const version = await redis.hincrby(`${base}:meta`, 'v', 1);
      await redis.xadd(
        `${base}:log`,
        `${version}-1`,
        'x',
        JSON.stringify({ a: Date.now(), s: [['room', [[name, value]]]], p: [] }),
      );
    } finally {
      redis.disconnect();
    }
  }

  it('sends an update made through node B to subscribers on A and C, each seeing only its keys', async () => {
    const [a, b, c] = cluster.nodes;
    const alice = await a.helloAs('alice');
    const bob = await c.helloAs('bob');
    await call(b.apiUrl, 'PUT', `/v1/connection/${alice.cid}/lattices/chat`, { private: { alice: { room1: {} } } });
    await call(a.apiUrl, 'PUT', `/v1/connection/${bob.cid}/lattices/chat`, { private: { bob: { room2: {} } } });
    expect(await alice.client.next()).toEqual(lattice({ room1: {} }));
    expect(await bob.client.next()).toEqual(lattice({ room2: {} }));

    await call(b.apiUrl, 'POST', '/v1/lattice/chat', {
      shared: { room1: { msg_counter: 5 }, room2: { msg_counter: 7 } },
    });
    expect(await alice.client.next()).toEqual(lattice({ room1: { msg_counter: 5 } }));
    expect(await bob.client.next()).toEqual(lattice({ room2: { msg_counter: 7 } }));
    await expectNothingMoreThan(alice.client, 'alice', c.apiUrl);
    await expectNothingMoreThan(bob.client, 'bob', a.apiUrl);
  });

  it('gives a connection subscribing on another node the whole merged state, not only its own call', async () => {
    const [a, b, c] = cluster.nodes;
    // Nobody subscribes anywhere yet: a single node would drop this; Redis keeps it.
    await call(a.apiUrl, 'POST', '/v1/lattice/chat', {
      shared: { room1: { msg_counter: 10, tags_set: ['x'] } },
      private: { alice: { room1: { seen_counter: 3 } } },
    });
    await call(b.apiUrl, 'POST', '/v1/lattice/chat', { shared: { room1: { tags_set: ['y'] } } });
    const alice = await c.helloAs('alice');
    await call(b.apiUrl, 'PUT', `/v1/connection/${alice.cid}/lattices/chat`, { private: { alice: { room1: {} } } });
    expect(await alice.client.next()).toEqual(
      lattice({ room1: { msg_counter: 10, tags_set: ['x', 'y'], seen_counter: 3 } }),
    );
  });

  it('makes every node converge on updates made concurrently through all nodes', async () => {
    const users = await Promise.all(cluster.nodes.map((node, i) => node.helloAs(`user${i}`)));
    for (const [i, { cid }] of users.entries()) {
      await call(cluster.nodes[i].apiUrl, 'PUT', `/v1/connection/${cid}/lattices/chat`, {
        private: { [`user${i}`]: { room: {} } },
      });
      await users[i].client.next();
    }
    await Promise.all(
      Array.from({ length: 30 }, (_, n) =>
        call(cluster.nodes[n % 3].apiUrl, 'POST', '/v1/lattice/chat', {
          shared: { room: { tags_set: [`t${n}`], n_counter: n } },
        }),
      ),
    );
    // Each client merges what it receives (as the SDK does) and must end with the same state.
    const expected = { tags_set: Array.from({ length: 30 }, (_, n) => `t${n}`).sort(), n_counter: 29 };
    for (const { client } of users) {
      const seen: { tags_set: string[]; n_counter: number } = { tags_set: [], n_counter: 0 };
      while (seen.tags_set.length < 30 || seen.n_counter < 29) {
        const frame = await client.next();
        const vars = (frame[2] as { room: { tags_set?: string[]; n_counter?: number } }).room;
        seen.tags_set = [...new Set([...seen.tags_set, ...(vars.tags_set ?? [])])].sort();
        seen.n_counter = Math.max(seen.n_counter, vars.n_counter ?? 0);
      }
      expect(seen).toEqual(expected);
    }
  });

  it('answers 204 to a lattice subscribe for a connection of a node that is not alive, and nothing happens', async () => {
    const [a, b] = cluster.nodes;
    await call(a.apiUrl, 'PUT', '/v1/connection/nodeZ-abcdefghijklmnopqrstuv/lattices/chat', {
      shared: { k: { n_counter: 4 } },
    });
    const alice = await b.helloAs('alice');
    await call(a.apiUrl, 'PUT', `/v1/connection/${alice.cid}/lattices/chat`, { private: { alice: { k: {} } } });
    expect(await alice.client.next()).toEqual(lattice({ k: {} }));
  });

  it('keeps expires_in as one absolute deadline: a node loading the namespace later does not show an expired entry', async () => {
    const [a, b] = cluster.nodes;
    const updatedAt = Date.now();
    await call(a.apiUrl, 'POST', '/v1/lattice/chat', {
      private: { bob: { gone: { n_counter: 1, expires_in: '300ms' }, kept: {} } },
    });
    // Wall time is what this row is about: the deadline must have passed.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, updatedAt + 400 - Date.now())));
    const bob = await b.helloAs('bob');
    await call(a.apiUrl, 'PUT', `/v1/connection/${bob.cid}/lattices/chat`, { private: { bob: { other: {} } } });
    expect(await bob.client.next()).toEqual(lattice({ kept: {}, other: {} }));
  });

  it('repairs a missed last update too, with no later update to reveal it (periodic position check)', async () => {
    const [a, b] = cluster.nodes;
    const alice = await a.helloAs('alice');
    await call(b.apiUrl, 'PUT', `/v1/connection/${alice.cid}/lattices/chat`, { private: { alice: { room: {} } } });
    await alice.client.next();
    await appendWithoutMessage('lost_counter', 9);
    // Checked every 5 s: the frame comes without any further update.
    expect(await alice.client.next(8000)).toEqual(lattice({ room: { lost_counter: 9 } }));
  }, 15_000);

  it('detects a missed update by its version and repairs from the log (gateway_lattice_repairs_total)', async () => {
    const [a, b] = cluster.nodes;
    const alice = await a.helloAs('alice');
    await call(b.apiUrl, 'PUT', `/v1/connection/${alice.cid}/lattices/chat`, { private: { alice: { room: {} } } });
    await alice.client.next();
    await appendWithoutMessage('lost_counter', 7);
    await call(b.apiUrl, 'POST', '/v1/lattice/chat', { shared: { room: { next_counter: 8 } } });
    expect(await alice.client.next()).toEqual(lattice({ room: { lost_counter: 7 } }));
    expect(await alice.client.next()).toEqual(lattice({ room: { next_counter: 8 } }));
    const metrics = await (await fetch(a.apiUrl + '/metrics')).text();
    expect(metrics).toMatch(/^gateway_lattice_repairs_total 1$/m);
  });
});

describe('cluster: LATTICE_RETENTION (SPEC §1, §11)', () => {
  let cluster: TestCluster;
  let redis: Redis;
  beforeEach(async () => {
    cluster = await startTestCluster(2, { LATTICE_RETENTION: '3s' });
    redis = topologyRedis();
  });
  afterEach(async () => {
    redis.disconnect();
    await cluster.close();
  });

  const logKey = (namespace: string) => `${new ClusterNames(cluster.prefix).lattice(namespace)}:log`;

  async function untilGone(key: string, ms: number): Promise<number> {
    const startedAt = Date.now();
    while ((await redis.exists(key)) === 1) {
      if (Date.now() - startedAt > ms) throw new Error(`timed out after ${ms} ms waiting for ${key} to expire`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return Date.now() - startedAt;
  }

  it('drops a namespace nobody subscribes to LATTICE_RETENTION after its last update, and keeps one that is held', async () => {
    const [a, b] = cluster.nodes;
    const alice = await a.helloAs('alice');
    expect(
      (
        await api(b.apiUrl, 'PUT', `/v1/connection/${alice.cid}/lattices/held`, {
          shared: { k: { n_counter: 1 } },
          private: { alice: { k: {} } },
        })
      ).status,
    ).toBe(204);
    expect((await api(b.apiUrl, 'POST', '/v1/lattice/orphan', { shared: { k: { n_counter: 1 } } })).status).toBe(204);
    const goneAfterMs = await untilGone(logKey('orphan'), 6000);
    expect(goneAfterMs).toBeGreaterThan(2000);
    // The held namespace outlived the same retention: its node refreshes it.
    expect(await redis.exists(logKey('held'))).toBe(1);
    const bob = await b.helloAs('bob');
    expect(
      (await api(a.apiUrl, 'PUT', `/v1/connection/${bob.cid}/lattices/held`, { private: { bob: { k: {} } } })).status,
    ).toBe(204);
    expect(await bob.client.next()).toEqual(['lattice', { namespace: 'held' }, { k: { n_counter: 1 } }]);
  }, 20_000);
});
