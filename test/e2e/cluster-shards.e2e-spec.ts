import Redis from 'ioredis';
import { ClusterNames, partitionOf } from '../../src/cluster/channels';
import { jumpHash } from '../../src/cluster/jump-hash';
import { TEST_REDIS_URL, TestCluster, randomPrefix, startTestCluster } from './harness/cluster';
import { api } from './harness/http';
import { RedisShards, startShards } from './harness/redis-topologies';
import { startTestGateway } from './harness/gateway';
import { waitFor } from './harness/wait';

/**
 * SPEC §13.4: the partitions on several independent Redis (REDIS_SHARDS),
 * REDIS_URL keeping only the control keys and channels. Two nodes on one
 * control instance and three shards.
 */
describe('cluster: partitions on shards (SPEC §13.4)', () => {
  let shards: RedisShards;
  let cluster: TestCluster;
  let names: ClusterNames;
  let clients: Redis[];
  let control: Redis;

  /** A topic of partition p's… on shard `shard` (of 3). */
  const topicOn = (shard: number, tag: string): string => {
    for (let i = 0; ; i++) {
      const topic = `${tag}/${i}`;
      if (jumpHash(partitionOf(topic), 3) === shard) return topic;
    }
  };

  beforeAll(async () => {
    shards = await startShards(3);
    const prefix = randomPrefix();
    names = new ClusterNames(prefix);
    cluster = await startTestCluster(2, { REDIS_SHARDS: shards.urls.join(' '), REDIS_PREFIX: prefix });
    clients = shards.urls.map((url) => new Redis(url));
    control = new Redis(TEST_REDIS_URL);
  }, 30_000);

  afterAll(async () => {
    await cluster?.close();
    for (const client of clients ?? []) client.disconnect();
    control?.disconnect();
    await shards?.stop();
  });

  it("keeps each partition's keys on shard jumpHash(p, 3) and only control keys on REDIS_URL; delivers across nodes", async () => {
    const [a, b] = cluster.nodes;
    const { client, cid } = await a.helloAs('ann');
    const topics = [0, 1, 2].map((shard) => topicOn(shard, 'placed'));
    for (const topic of topics)
      expect((await api(b.apiUrl, 'PUT', `/v1/connection/${cid}/subscriptions/${topic}`)).status).toBe(204);
    for (const topic of topics) {
      expect((await api(b.apiUrl, 'POST', `/v1/publish/${topic}`, { topic })).status).toBe(204);
      expect(await client.next()).toEqual(['message', { topic: topic.replace('/', '.') }, { topic }]);
    }
    for (const [shard, topic] of topics.entries()) {
      for (const [i, redis] of clients.entries())
        expect([shard, i, await redis.exists(names.topicHistory(topic))]).toEqual([shard, i, i === shard ? 1 : 0]);
    }
    expect(await control.keys(`${names.prefix}th:*`)).toEqual([]);
    expect(await control.exists(names.nodes)).toBe(1);
    // The user's presence hash and session record live on the user's shard.
    const userShard = jumpHash(partitionOf('ann'), 3);
    expect(await clients[userShard].exists(names.user('ann'))).toBe(1);
    expect(await control.exists(names.user('ann'))).toBe(0);
  });

  it('answers 503 only for what lives on a shard that is down, and heals when it is back', async () => {
    const [a, b] = cluster.nodes;
    const { client, cid } = await a.helloAs('bob');
    const up = topicOn(0, 'alive');
    const down = topicOn(1, 'outage');
    for (const topic of [up, down])
      expect((await api(b.apiUrl, 'PUT', `/v1/connection/${cid}/subscriptions/${topic}`)).status).toBe(204);
    await shards.servers[1].kill();
    await waitFor(
      async () => (await api(b.apiUrl, 'POST', `/v1/publish/${down}`, { n: 'x' })).status === 503,
      'a publish to the downed shard to answer 503',
      10_000,
      50,
    );
    expect((await api(b.apiUrl, 'POST', `/v1/publish/${up}`, { n: 'still' })).status).toBe(204);
    expect(await client.next()).toEqual([
      'message',
      expect.objectContaining({ topic: up.replace('/', '.') }),
      { n: 'still' },
    ]);

    // A node started meanwhile comes up (after its start-up wait for the shard) and serves what lives elsewhere.
    const late = await startTestGateway(
      { REDIS_URL: TEST_REDIS_URL, REDIS_SHARDS: shards.urls.join(' '), REDIS_PREFIX: names.prefix, NODE_ID: 'nodeC' },
      undefined,
      cluster.upstream,
    );
    try {
      expect((await api(late.apiUrl, 'POST', `/v1/publish/${up}`, { n: 'late' })).status).toBe(204);
      expect(await client.next()).toEqual(['message', { topic: up.replace('/', '.') }, { n: 'late' }]);
      expect((await api(late.apiUrl, 'POST', `/v1/publish/${down}`, { n: 'x' })).status).toBe(503);
    } finally {
      await late.close();
    }
    // Back empty: the nodes reconnect, resubscribe and re-assert what lives there.
    await shards.servers[1].restart();
    await waitFor(
      async () => (await api(b.apiUrl, 'POST', `/v1/publish/${down}`, { n: 'back' })).status === 204,
      'the shard to take publishes again',
      10_000,
      50,
    );
    const frame = await client.next();
    expect(frame[0]).toBe('message');
    expect(frame[2]).toEqual({ n: 'back' });
  }, 45_000);

  it('refuses to start a node that lists other shards than the running ones, naming both lists', async () => {
    const reordered = [shards.urls[1], shards.urls[0], shards.urls[2]].join(' ');
    await expect(
      startTestGateway(
        { REDIS_URL: TEST_REDIS_URL, REDIS_SHARDS: reordered, REDIS_PREFIX: names.prefix, NODE_ID: 'nodeZ' },
        undefined,
        cluster.upstream,
      ),
    ).rejects.toThrow(/REDIS_SHARDS: this node lists .* the running nodes /);
  });
});
