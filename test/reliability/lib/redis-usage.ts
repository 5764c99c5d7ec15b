import Redis from 'ioredis';

/** DBSIZE, used_memory and (up to 2,000) key names of the Redis at `url`, on a short-lived connection. */
export async function redisUsage(url: string): Promise<{ keys: number; usedMemoryBytes: number; keyNames: string[] }> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    const keys = await redis.dbsize();
    const info = await redis.info('memory');
    const usedMemoryBytes = Number(/^used_memory:(\d+)/m.exec(info)?.[1] ?? NaN);
    const keyNames = keys <= 2000 ? await redis.keys('*') : [];
    return { keys, usedMemoryBytes, keyNames };
  } finally {
    redis.disconnect();
  }
}
