import Redis from 'ioredis';
import { TestCluster, startTestCluster } from './harness/cluster';
import { api } from './harness/http';
import { RedisServer, redisInfo } from './harness/redis-server';
import { partitionOf } from '../../src/cluster/channels';
import { keySlot, partitionTag } from '../../src/cluster/partition-tags';
import { RedisCluster, startRedisCluster } from './harness/redis-topologies';
import { optInProtocols } from './harness/resume';
import { within } from './harness/wait';

/**
 * SPEC §13.1 `REDIS_WAIT_REPLICAS` / `REDIS_WAIT_TIMEOUT`: a history publish
 * and a lattice update are acknowledged (204) only once that many replicas
 * confirmed them; else 503 `cluster_unavailable`, never 204. A private
 * primary with one replica (a real `redis-server --replicaof`).
 */
describe('cluster: REDIS_WAIT_REPLICAS (SPEC §13.1)', () => {
  let primary: RedisServer;
  let replica: RedisServer;
  let cluster: TestCluster;

  beforeEach(async () => {
    primary = await RedisServer.start();
    replica = await RedisServer.start(['--replicaof', '127.0.0.1', String(primary.port)]);
    await untilReplicaOnline(primary);
  });

  afterEach(async () => {
    await cluster?.close();
    await replica?.kill();
    await primary?.kill();
  });

  async function untilReplicaOnline(server: RedisServer): Promise<void> {
    const probe = new Redis(server.url, { maxRetriesPerRequest: 1 });
    try {
      await within(
        (async () => {
          while (!/slave0:.*state=online/.test(await probe.info('replication')))
            await new Promise((resolve) => setTimeout(resolve, 20));
        })(),
        'the replica to be in sync (state=online)',
        10_000,
      );
    } finally {
      probe.disconnect();
    }
  }

  async function startNodes(env: Record<string, string>): Promise<void> {
    cluster = await startTestCluster(2, { REDIS_URL: primary.url, ...env });
  }

  const publish = (n: number) => api(cluster.nodes[n % 2].apiUrl, 'POST', '/v1/publish/room', JSON.stringify({ n }));
  const update = (n: number) =>
    api(cluster.nodes[n % 2].apiUrl, 'POST', '/v1/lattice/rooms', { shared: { r1: { seen_counter: n } } });

  it('with the replica in sync, publishes and lattice updates answer 204, and the subscriber gets them', async () => {
    await startNodes({ REDIS_WAIT_REPLICAS: '1', REDIS_WAIT_TIMEOUT: '2s' });
    const { client } = await cluster.nodes[0].hello({ query: 'user=ann', protocols: optInProtocols() });
    const cid = await cluster.nodes[0].connectionIdOf('user=ann');
    expect((await api(cluster.nodes[1].apiUrl, 'PUT', `/v1/connection/${cid}/subscriptions/room`)).status).toBe(204);
    for (let n = 1; n <= 4; n++) expect([n, (await publish(n)).status]).toEqual([n, 204]);
    for (let n = 1; n <= 4; n++) expect((await client.next())[2]).toEqual({ n });
    for (let n = 1; n <= 4; n++) expect([n, (await update(n)).status]).toEqual([n, 204]);
  });

  it('with the replica gone, every history publish, lattice update and session-record change answers 503 cluster_unavailable after REDIS_WAIT_TIMEOUT, none 204', async () => {
    await startNodes({ REDIS_WAIT_REPLICAS: '1', REDIS_WAIT_TIMEOUT: '100ms' });
    await cluster.nodes[0].hello({ query: 'user=ann', protocols: optInProtocols() });
    const resumable = await cluster.nodes[0].connectionIdOf('user=ann');
    const legacy = (await cluster.nodes[0].helloAs('lee')).cid;
    await replica.kill();
    // A resumable session's subscription is in its record (SPEC §12.5): not confirmed, not acknowledged.
    const recorded = await api(cluster.nodes[1].apiUrl, 'PUT', `/v1/connection/${resumable}/subscriptions/room`);
    expect([recorded.status, (JSON.parse(recorded.text) as { error: string }).error]).toEqual([
      503,
      'cluster_unavailable',
    ]);
    // A legacy connection's subscription writes nothing to Redis that a failover could lose.
    expect((await api(cluster.nodes[1].apiUrl, 'PUT', `/v1/connection/${legacy}/subscriptions/room`)).status).toBe(204);
    for (let n = 1; n <= 4; n++) {
      for (const res of [await publish(n), await update(n)]) {
        expect([n, res.status, (JSON.parse(res.text) as { error: string }).error]).toEqual([
          n,
          503,
          'cluster_unavailable',
        ]);
      }
    }
  });

  it('REDIS_WAIT_REPLICAS=0 (the default) asks no replica: 204 with the replica gone', async () => {
    await startNodes({});
    await replica.kill();
    for (let n = 1; n <= 2; n++) expect([(await publish(n)).status, (await update(n)).status]).toEqual([204, 204]);
  });
});

/**
 * The same on a Redis Cluster (SPEC §13.5) of three primaries with a replica
 * each: WAIT goes to the primary each write went to.
 */
describe('cluster: REDIS_WAIT_REPLICAS on a Redis Cluster (SPEC §13.1, §13.5)', () => {
  let redis: RedisCluster;
  let cluster: TestCluster | null = null;

  beforeAll(async () => {
    redis = await startRedisCluster(3, { replicasPerPrimary: 1 });
  }, 30_000);

  afterAll(async () => {
    await cluster?.close();
    await redis?.stop();
  });

  it("answers 204 while every replica is in sync (the subscriber gets each publish); once one primary's replica is gone, 503 cluster_unavailable for every history publish and lattice update there, 204 elsewhere", async () => {
    cluster = await startTestCluster(2, {
      REDIS_URL: redis.url,
      REDIS_WAIT_REPLICAS: '1',
      REDIS_WAIT_TIMEOUT: '500ms',
    });
    const [a, b] = cluster.nodes;
    const { client } = await a.hello({ query: 'user=ann', protocols: optInProtocols() });
    const resumable = await a.connectionIdOf('user=ann');
    expect((await api(b.apiUrl, 'PUT', `/v1/connection/${resumable}/subscriptions/room`)).status).toBe(204);
    // Topics and namespaces in several partitions, so the writes land on every primary.
    const topics = ['room', 'hall', 'yard', 'deck', 'roof', 'cave'];
    const publish = (n: number, topic = topics[n % topics.length]) =>
      api(cluster!.nodes[n % 2].apiUrl, 'POST', `/v1/publish/${topic}`, JSON.stringify({ n }));
    const update = (n: number, namespace = topics[n % topics.length]) =>
      api(cluster!.nodes[n % 2].apiUrl, 'POST', `/v1/lattice/${namespace}`, {
        shared: { r1: { seen_counter: n } },
      });
    for (let n = 1; n <= 12; n++)
      expect([n, (await publish(n)).status, (await update(n)).status]).toEqual([n, 204, 204]);
    expect((await publish(13, 'room')).status).toBe(204);
    for (const n of [6, 12, 13]) expect((await client.next())[2]).toEqual({ n });

    // The replica of the primary owning room's partition goes: WAIT is asked of the primary each write went to.
    const ownerOf = (name: string) => redis.ownerOf(keySlot(`{${partitionTag(partitionOf(name))}}`));
    const roomPrimary = await ownerOf('room');
    const replicaOf = new Map<number, number>();
    for (const node of redis.nodes) {
      const upstream = /master_port:(\d+)/.exec(await redisInfo(node.port, 'replication'))?.[1];
      if (upstream !== undefined) replicaOf.set(Number(upstream), node.port);
    }
    await redis.node(replicaOf.get(roomPrimary)!).kill();
    const elsewhere: string[] = [];
    for (const topic of topics) if ((await ownerOf(topic)) !== roomPrimary) elsewhere.push(topic);
    expect(elsewhere.length).toBeGreaterThan(0);
    const statuses = async (topic: string, n: number) => {
      const [published, updated] = [await publish(n, topic), await update(n, topic)];
      return [topic, published.status, updated.status, JSON.parse(published.text || '{}').error];
    };
    for (let n = 14; n <= 17; n++) expect(await statuses('room', n)).toEqual(['room', 503, 503, 'cluster_unavailable']);
    for (const [i, topic] of elsewhere.entries())
      expect(await statuses(topic, 20 + i)).toEqual([topic, 204, 204, undefined]);
  }, 60_000);
});
