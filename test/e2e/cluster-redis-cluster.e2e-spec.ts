import { ClusterNames, partitionOf } from '../../src/cluster/channels';
import { keySlot, partitionTag } from '../../src/cluster/partition-tags';
import { TestCluster, randomPrefix, startTestCluster } from './harness/cluster';
import { TestGateway, startTestGateway } from './harness/gateway';
import { api } from './harness/http';
import { RedisServer, redisCall, untilClusterOk } from './harness/redis-server';
import { RedisCluster, startRedisCluster } from './harness/redis-topologies';
import { expectEightAcrossRollback, optIn, positionOf } from './harness/resume';
import { expectPut } from './harness/v1';
import { waitFor } from './harness/wait';
import { WsClient } from './harness/ws-client';

/**
 * SPEC §13.5 on a private three-primary Redis Cluster, whatever the run's
 * topology: what only a Redis Cluster does. A slot migrated under a busy
 * topic (its channel and its history move to another primary) is followed:
 * every acknowledged publish reaches the subscriber, offsets without a
 * silent gap; and a `redis+cluster://` URL that names no Redis Cluster is a
 * configuration error at start.
 */
describe('cluster mode on a Redis Cluster (SPEC §13.5)', () => {
  let redis: RedisCluster;
  let cluster: TestCluster | null = null;
  const clients: WsClient[] = [];

  beforeAll(async () => {
    redis = await startRedisCluster(3);
  }, 30_000);

  afterEach(async () => {
    await Promise.all(clients.splice(0).map((client) => client.close()));
    await cluster?.close();
    cluster = null;
  });

  afterAll(() => redis?.stop());

  it('follows a busy topic whose slot migrates to another primary: every acknowledged publish delivered, offsets with no gap, live again within 2 s', async () => {
    cluster = await startTestCluster(2, { REDIS_URL: redis.url });
    const [a, b] = cluster.nodes;
    const topic = 'busy';
    const ann = await optIn(a, 'ann');
    clients.push(ann.client);
    await expectPut(b.apiUrl, `/v1/connection/${ann.cid}/subscriptions/${topic}`);
    const slot = keySlot(new ClusterNames(cluster.prefix).channel('t', topic));
    expect(slot).toBe(keySlot(`{${partitionTag(partitionOf(topic))}}`));
    const from = await redis.ownerOf(slot);
    const to = redis.nodes.map((node) => node.port).find((port) => port !== from)!;

    const acknowledged: number[] = [];
    const refused: number[] = [];
    let isPublishing = true;
    let n = 0;
    const publishing = (async () => {
      while (isPublishing) {
        const i = ++n;
        const { status } = await api(b.apiUrl, 'POST', `/v1/publish/${topic}`, JSON.stringify(i));
        (status === 204 ? acknowledged : refused).push(i);
      }
    })();
    await waitFor(() => acknowledged.length >= 50, 'the first 50 publishes to be acknowledged', 10_000);
    await redis.migrateSlot(slot, to);
    const movedAt = n;
    await waitFor(() => acknowledged.some((i) => i > movedAt + 20), '20 publishes after the migration', 10_000);
    isPublishing = false;
    await publishing;

    // What the client got: message frames in offset order, no offset skipped, every acknowledged payload.
    const received: number[] = [];
    const offsets: number[] = [];
    const last = Math.max(...acknowledged);
    while (!received.includes(last)) {
      const frame = await ann.client.next(2000);
      offsets.push(positionOf(frame, topic)[0]);
      received.push(frame[2] as number);
    }
    expect(offsets).toEqual(offsets.map((_, i) => offsets[0] + i));
    expect(acknowledged.filter((i) => !received.includes(i))).toEqual([]);
    expect(await redis.ownerOf(slot)).toBe(to);

    // Live again: a publish now reaches the client within 2 s.
    expect((await api(a.apiUrl, 'POST', `/v1/publish/${topic}`, JSON.stringify('after'))).status).toBe(204);
    let frame = await ann.client.next(2000);
    while (frame[2] !== 'after') frame = await ann.client.next(2000);
    expect(positionOf(frame, topic)[0]).toBe(offsets[offsets.length - 1] + (received.length - offsets.length) + 1);
  }, 60_000);

  it("follows a failover of a topic's primary: publishes delivered again within 10 s of the kill, a new epoch, the connection still known", async () => {
    const ha = await startRedisCluster(3, { replicasPerPrimary: 1, nodeTimeoutMs: 1000 });
    try {
      cluster = await startTestCluster(2, { REDIS_URL: ha.url });
      const [a, b] = cluster.nodes;
      const topic = 'ha';
      const ann = await optIn(a, 'ann');
      clients.push(ann.client);
      await expectPut(b.apiUrl, `/v1/connection/${ann.cid}/subscriptions/${topic}`);
      expect((await api(b.apiUrl, 'POST', `/v1/publish/${topic}`, JSON.stringify('before'))).status).toBe(204);
      const before = await ann.client.next(2000);
      expect(before[2]).toBe('before');
      const slot = keySlot(new ClusterNames(cluster.prefix).channel('t', topic));
      const primary = await ha.ownerOf(slot);
      await ha.node(primary).kill();
      const killedAt = Date.now();
      // Publish until one is acknowledged and reaches ann: the replica was promoted and both nodes followed.
      let delivered: unknown = null;
      await waitFor(
        async () => {
          const { status } = await api(b.apiUrl, 'POST', `/v1/publish/${topic}`, JSON.stringify('after'));
          if (status !== 204) return false;
          const frame = await ann.client.next(2000).catch(() => null);
          delivered = frame;
          return frame !== null && frame[2] === 'after';
        },
        () => `a publish after the kill of ${primary} to reach ann (last: ${JSON.stringify(delivered)})`,
        10_000,
        100,
      );
      expect(Date.now() - killedAt).toBeLessThan(10_000);
      expect(await ha.ownerOf(slot, ha.nodes.find((n) => n.port !== primary)!.port)).not.toBe(primary);
      // A failover is another instance (SPEC §13.1): the history starts a new epoch.
      expect(positionOf(delivered as never, topic)[1]).not.toBe(positionOf(before, topic)[1]);
      // The connection is still known cluster-wide, held by node A.
      const connections = await api(b.apiUrl, 'GET', '/v1/user/ann/connections');
      expect(connections.status).toBe(200);
      expect(connections.text).toContain(ann.cid);
    } finally {
      await cluster?.close();
      cluster = null;
      await ha.stop();
    }
  }, 60_000);

  it('a primary restarted from its snapshot (no failover, same node id) is another instance: publishes 1-3, snapshot, 4-5, restart, 6-8; every subscriber gets 1..8 once and in order, 6-8 in a new epoch', async () => {
    const own = await startRedisCluster(3);
    try {
      cluster = await startTestCluster(2, { REDIS_URL: own.url });
      const [a, b] = cluster.nodes;
      const topic = 'room';
      const legacyA = await a.helloAs('lee');
      const legacyB = await b.helloAs('lou');
      const resumableA = await optIn(a, 'ann');
      const resumableB = await optIn(b, 'bob');
      clients.push(legacyA.client, legacyB.client, resumableA.client, resumableB.client);
      for (const cid of [legacyA.cid, resumableB.cid])
        await expectPut(a.apiUrl, `/v1/connection/${cid}/subscriptions/${topic}`);
      for (const cid of [legacyB.cid, resumableA.cid])
        await expectPut(b.apiUrl, `/v1/connection/${cid}/subscriptions/${topic}`);
      const primary = own.node(await own.ownerOf(keySlot(new ClusterNames(cluster.prefix).channel('t', topic))));
      // A publish is acknowledged once (retried while the restarted primary rejoins: a refusal wrote nothing).
      const publish = async (n: number): Promise<void> => {
        await waitFor(
          async () =>
            (await api((n % 2 === 0 ? b : a).apiUrl, 'POST', `/v1/publish/${topic}`, JSON.stringify({ n }))).status ===
            204,
          `publish ${n} to be acknowledged`,
          10_000,
          50,
        );
      };

      for (let n = 1; n <= 3; n++) await publish(n);
      await primary.snapshot();
      for (let n = 4; n <= 5; n++) await publish(n);
      await primary.kill();
      // Readiness names each primary (SPEC §13.6): the killed one down, the others up, the node still ready.
      const states = (down: number | null) =>
        Object.fromEntries(own.nodes.map((node) => [`127.0.0.1:${node.port}`, node.port === down ? 'down' : 'up']));
      await untilPrimaryStates(a.apiUrl, states(primary.port));
      await primary.restart();
      await untilClusterOk(
        own.nodes.map((node) => node.port),
        10_000,
      );
      await untilPrimaryStates(a.apiUrl, states(null));
      for (let n = 6; n <= 8; n++) await publish(n);

      await expectEightAcrossRollback(topic, [legacyA.client, legacyB.client], [resumableA.client, resumableB.client]);
    } finally {
      await cluster?.close();
      cluster = null;
      await own.stop();
    }
  }, 60_000);

  it('refuses to start with a redis+cluster:// URL naming a Redis that is not a Redis Cluster node', async () => {
    const plain = await RedisServer.start();
    try {
      const started = startTestGateway({
        REDIS_URL: `redis+cluster://127.0.0.1:${plain.port}`,
        REDIS_PREFIX: randomPrefix(),
        NODE_ID: 'nodeA',
      });
      await expect(started).rejects.toThrow(
        `REDIS_URL: 127.0.0.1:${plain.port} is not a Redis Cluster node (cluster_enabled is not 1): use redis:// for one Redis`,
      );
      expect(await redisCall(plain.port, ['DBSIZE'])).toBe(0);
    } finally {
      await plain.kill();
    }
  });

  it('delivers across nodes whose seeds name different cluster nodes', async () => {
    const [first, second] = redis.nodes;
    const prefix = randomPrefix();
    const nodes: TestGateway[] = [];
    try {
      for (const [i, seed] of [first, second].entries())
        nodes.push(
          await startTestGateway({
            REDIS_URL: `redis+cluster://127.0.0.1:${seed.port}`,
            REDIS_PREFIX: prefix,
            NODE_ID: `node${i}`,
          }),
        );
      const { client } = await nodes[0].hello({ query: 'user=bo' });
      clients.push(client);
      const cid = await nodes[0].connectionIdOf('user=bo');
      await expectPut(nodes[1].apiUrl, `/v1/connection/${cid}/subscriptions/t/1`);
      expect((await api(nodes[1].apiUrl, 'POST', '/v1/publish/t/1', JSON.stringify('hi'))).status).toBe(204);
      expect(await client.next()).toEqual(['message', { topic: 't.1' }, 'hi']);
    } finally {
      await Promise.all(nodes.map((node) => node.close()));
    }
  });
});

/** Poll a node's /health/ready until its `cluster.primaries` reads `expected` (`host:port` → up or down). */
async function untilPrimaryStates(apiUrl: string, expected: Record<string, string>): Promise<void> {
  let body: { status?: string; info?: { cluster?: { primaries?: unknown } } } = {};
  await waitFor(
    async () => {
      const res = await fetch(apiUrl + '/health/ready');
      body = (await res.json()) as typeof body;
      const sorted = (states: unknown) => JSON.stringify(Object.entries(states ?? {}).sort());
      return res.status === 200 && sorted(body.info?.cluster?.primaries) === sorted(expected);
    },
    () => `${apiUrl}/health/ready to name the primaries ${JSON.stringify(expected)}: ${JSON.stringify(body)}`,
    10_000,
    50,
  );
}
