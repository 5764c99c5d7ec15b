import Redis, { Cluster } from 'ioredis';
import { designedSlot, keySlot, partitionTag } from '../../src/cluster/partition-tags';
import { RedisServer, redisCall, redisCommand } from './harness/redis-server';
import { RedisCluster, RedisShards, startRedisCluster, startShards } from './harness/redis-topologies';

/**
 * The harness's Redis topologies (SPEC §13.4, §13.5) answer as Redis does:
 * independent shards, a three-primary Redis Cluster formed by `redis-cli
 * --cluster create` and served through ioredis `Cluster`, and a slot
 * migrated between two primaries. Also checks the partition tags against
 * Redis itself: `CLUSTER KEYSLOT` agrees with `keySlot`, and the tags spread
 * evenly over the slot ranges `redis-cli` really assigns.
 */
describe('Redis topologies of the e2e harness', () => {
  const partitions = Array.from({ length: 128 }, (_, p) => p);

  describe('shards', () => {
    let shards: RedisShards;

    beforeAll(async () => {
      shards = await startShards(3);
    });

    afterAll(() => shards?.stop());

    it('are independent servers on distinct ports, each keeping its own keys', async () => {
      expect(new Set(shards.servers.map((s) => s.port)).size).toBe(3);
      await Promise.all(shards.servers.map((s, i) => redisCall(s.port, ['SET', 'shard', String(i)])));
      const values = await Promise.all(shards.servers.map((s) => redisCall(s.port, ['GET', 'shard'])));
      expect(values).toEqual(['0', '1', '2']);
    });
  });

  describe('a three-primary Redis Cluster', () => {
    let cluster: RedisCluster;
    let client: Cluster;

    beforeAll(async () => {
      cluster = await startRedisCluster(3);
      client = new Cluster(cluster.seeds, { redisOptions: { maxRetriesPerRequest: 2 } });
    }, 30_000);

    afterAll(async () => {
      client?.disconnect();
      await cluster?.stop();
    });

    it('serves all 16384 slots over three primaries, and each primary holds 42 or 43 partitions', async () => {
      const ranges = await cluster.slotRanges();
      const primaries = [...new Set(ranges.map((r) => r.port))];
      expect(primaries).toHaveLength(3);
      expect(ranges.reduce((sum, r) => sum + r.last - r.first + 1, 0)).toBe(16384);
      const partitionsOn = primaries.map(
        (port) =>
          partitions.filter((p) =>
            ranges.some((r) => r.port === port && r.first <= designedSlot(p) && designedSlot(p) <= r.last),
          ).length,
      );
      expect(partitionsOn.sort()).toEqual([42, 43, 43]);
    });

    it('answers CLUSTER KEYSLOT exactly as keySlot computes it', async () => {
      const keys = [
        ...partitions.map((p) => `gateway:th:{${partitionTag(p)}}:room/${p}`),
        ...['foo', 'foo{}{bar}', 'foo{{bar}}zap', 'foo{bar}{zap}', '{unclosed', '{é}x', 'ключ'],
      ];
      const port = cluster.nodes[0].port;
      const slots = await Promise.all(keys.map((key) => redisCall(port, ['CLUSTER', 'KEYSLOT', key])));
      expect(slots).toEqual(keys.map(keySlot));
    });

    it('answers SET and GET through ioredis Cluster for a key of every partition (every primary)', async () => {
      const keys = partitions.map((p) => `gateway:u:{${partitionTag(p)}}:user-${p}`);
      await Promise.all(keys.map((key, p) => client.set(key, String(p))));
      expect(await Promise.all(keys.map((key) => client.get(key)))).toEqual(partitions.map(String));
    });

    it('moves a slot with its keys to another primary; the client follows and reads them there', async () => {
      const tag = partitionTag(5);
      const slot = keySlot(`{${tag}}`);
      const keys = Array.from({ length: 250 }, (_, i) => `gateway:th:{${tag}}:topic-${i}`);
      await Promise.all(keys.map((key, i) => client.set(key, `v${i}`)));
      const fromPort = await cluster.ownerOf(slot);
      const inSlot = await redisCall(fromPort, ['CLUSTER', 'COUNTKEYSINSLOT', String(slot)]);
      expect(inSlot).toBeGreaterThanOrEqual(keys.length);
      const toPort = (await cluster.slotRanges()).find((r) => r.port !== fromPort)!.port;

      await cluster.migrateSlot(slot, toPort);

      for (const node of cluster.nodes) expect(await cluster.ownerOf(slot, node.port)).toBe(toPort);
      expect(await redisCall(toPort, ['CLUSTER', 'COUNTKEYSINSLOT', String(slot)])).toBe(inSlot);
      expect(await redisCall(fromPort, ['CLUSTER', 'COUNTKEYSINSLOT', String(slot)])).toBe(0);
      expect(await Promise.all(keys.map((key) => client.get(key)))).toEqual(keys.map((_, i) => `v${i}`));
    });
  });

  it('a one-node cluster serves every slot and refuses a cross-slot script', async () => {
    const server = await RedisServer.startOneNodeCluster();
    try {
      const direct = new Redis(server.port, '127.0.0.1', { maxRetriesPerRequest: 0 });
      try {
        const crossSlot = direct.eval('return 1', 2, `{${partitionTag(0)}}:a`, `{${partitionTag(1)}}:b`);
        await expect(crossSlot).rejects.toThrow(/CROSSSLOT/);
      } finally {
        direct.disconnect();
      }
    } finally {
      await server.kill();
    }
    expect(await redisCommand(server.port, ['PING'])).toBeNull();
  });
});
