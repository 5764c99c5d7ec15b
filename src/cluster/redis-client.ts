import Redis, { RedisOptions } from 'ioredis';
import { parseRedisUrl, RedisTarget } from '../config/redis-url';

/** A target of one Redis (direct or through Sentinel); a Redis Cluster has its own client (redis-cluster-client.ts). */
export type OneRedisTarget = Exclude<RedisTarget, { readonly kind: 'cluster' }>;

/** A sentinel that does not answer a query within this is skipped for the next one. */
const SENTINEL_COMMAND_TIMEOUT_MS = 2000;

/** REDIS_URL as the config validated it; a problem here is a bug (an unvalidated URL). */
export function redisTargetOf(url: string): RedisTarget {
  const { target, problem } = parseRedisUrl(url);
  if (target === null) throw new Error(`bug: REDIS_URL was not validated (${problem})`);
  return target;
}

/**
 * One ioredis connection to `target` with the link's `options`. A direct
 * URL is read by ioredis itself, as it always was. A Sentinel target uses
 * ioredis' own Sentinel support (SPEC §13.2): every (re)connection asks the
 * sentinels for the current primary (retrying the sentinels with the link's
 * own backoff), the ready check refuses a node that is not a primary, a
 * `+switch-master` announced by any sentinel drops the connection at once so
 * that it reconnects to the new primary, and a READONLY answer (the node was
 * demoted under us) drops it too.
 */
export function createRedisClient(target: OneRedisTarget, options: RedisOptions): Redis {
  if (target.kind === 'direct') return new Redis(target.url, options);
  const { sentinels, ...sentinelOptions } = target.options;
  return new Redis({
    ...options,
    ...sentinelOptions,
    // ioredis adds the sentinels it discovers to this array: one copy per connection.
    sentinels: sentinels.map((address) => ({ ...address })),
    role: 'master' as const,
    sentinelRetryStrategy: options.retryStrategy ?? undefined,
    sentinelCommandTimeout: SENTINEL_COMMAND_TIMEOUT_MS,
    failoverDetector: true,
    reconnectOnError: (err) => err.message.includes('READONLY'),
  });
}
