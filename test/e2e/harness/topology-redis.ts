import { once } from 'node:events';
import Redis, { Cluster, RedisOptions } from 'ioredis';
import { jumpHash } from '../../../src/cluster/jump-hash';
import { partitionOfKey } from '../../../src/cluster/redis-shards';
import { TEST_REDIS_URL } from './cluster';

/**
 * A Redis client for specs that look at (or plant) keys, on whichever
 * topology the run uses (issue 30's matrix): on one Redis it is that Redis;
 * with TEST_REDIS_SHARDS each command goes to the instance holding its first
 * key (SPEC §13.4: partition p on shard jumpHash(p, N), untagged keys on
 * REDIS_URL), `keys` asks every instance and `del` deletes on each. Typed as
 * ioredis' Redis: only single-key commands, `keys` and `del` are routed.
 */
export function topologyRedis(options: RedisOptions = {}): Redis {
  const clusterUrl = process.env.TEST_REDIS_CLUSTER;
  if (clusterUrl !== undefined) return clusterRedis(clusterUrl, options);
  const shardUrls = (process.env.TEST_REDIS_SHARDS ?? '').split(/\s+/).filter((url) => url !== '');
  const control = new Redis(TEST_REDIS_URL, options);
  if (shardUrls.length === 0) return control;
  const shards = shardUrls.map((url) => new Redis(url, options));
  const all = [control, ...shards];
  const forKey = (key: unknown): Redis => {
    const partition = typeof key === 'string' ? partitionOfKey(key) : null;
    return partition === null ? control : shards[jumpHash(partition, shards.length)];
  };
  const routed: Record<string, (...args: unknown[]) => unknown> = {
    keys: async (pattern: unknown) => (await Promise.all(all.map((one) => one.keys(String(pattern))))).flat(),
    del: async (...keys: unknown[]) => {
      const counts = await Promise.all(keys.map((key) => forKey(key).del(String(key))));
      return counts.reduce((sum, n) => sum + n, 0);
    },
    disconnect: () => all.forEach((one) => one.disconnect()),
    quit: async () => void (await Promise.all(all.map((one) => one.quit()))),
  };
  return new Proxy(control, {
    get(target, name: string) {
      if (name in routed) return routed[name];
      const own = (target as unknown as Record<string, unknown>)[name];
      if (typeof own !== 'function') return own;
      return (...args: unknown[]) =>
        (forKey(args[0]) as unknown as Record<string, (...a: unknown[]) => unknown>)[name](...args);
    },
  });
}

/**
 * On the Redis Cluster topology: an ioredis Cluster (commands by their key's
 * slot), `keys` asked of every primary, `del` key by key.
 */
function clusterRedis(url: string, options: RedisOptions): Redis {
  const seeds = url
    .replace(/^redis\+cluster:\/\//, '')
    .split(',')
    .map((address) => ({ host: address.slice(0, address.lastIndexOf(':')), port: Number(address.split(':').pop()) }));
  const cluster = new Cluster(seeds, { redisOptions: options, lazyConnect: options.lazyConnect ?? false });
  const routed: Record<string, (...args: unknown[]) => unknown> = {
    keys: async (pattern: unknown) => {
      if (cluster.status !== 'ready') await once(cluster, 'ready');
      return (await Promise.all(cluster.nodes('master').map((node) => node.keys(String(pattern))))).flat();
    },
    del: async (...keys: unknown[]) => {
      const counts = await Promise.all(keys.map((key) => cluster.del(String(key))));
      return counts.reduce((sum, n) => sum + n, 0);
    },
  };
  return new Proxy(cluster, {
    get(target, name: string) {
      if (name in routed) return routed[name];
      const own = (target as unknown as Record<string, unknown>)[name];
      return typeof own === 'function' ? own.bind(target) : own;
    },
  }) as unknown as Redis;
}

/** Whether the run's cluster specs run on shards or a Redis Cluster (TEST_REDIS_TOPOLOGY=shards or cluster). */
export const isOnShards = (process.env.TEST_REDIS_SHARDS ?? '') !== '' || process.env.TEST_REDIS_CLUSTER !== undefined;

/**
 * A row about one Redis instance itself (killed, restarted, its clients
 * listed): it runs on the one-Redis topology; on shards the same failure
 * is cluster-shards.e2e-spec's (a shard killed and restarted).
 */
export const itOnOneRedis: jest.It = isOnShards ? it.skip : it;
