import { Logger, Module, OnApplicationShutdown } from '@nestjs/common';
import { HealthIndicatorService, TerminusModule } from '@nestjs/terminus';
import Redis from 'ioredis';
import { GatewayConfig } from '../config/gateway-config';
import { ConfigError } from '../config/load-config';
import { GatewayMetrics } from '../metrics/gateway-metrics';
import { Broker, MemoryBroker } from './broker';
import { ClusterNames } from './channels';
import { ClusterContext } from './cluster-context';
import { NodeLiveness } from './node-liveness';
import { RedisBroker } from './redis-broker';
import { redisTargetOf } from './redis-client';
import { RedisLink } from './redis-link';
import { RedisShards } from './redis-shards';
import { ClusterHealth, NoClusterHealth, RedisHealth } from './cluster-health';

/** How long start-up waits for Redis before the node starts with Redis down (and keeps retrying). */
const STARTUP_WAIT_MS = 5000;

/**
 * Provides the Broker and the ClusterContext: in memory on a single node,
 * Redis-backed when REDIS_URL is set (SPEC §11). Below every feature module:
 * it knows commands and channels as data only.
 */
@Module({
  imports: [TerminusModule],
  providers: [
    { provide: ClusterContext, inject: [GatewayConfig, GatewayMetrics], useFactory: openCluster },
    { provide: Broker, inject: [ClusterContext, GatewayMetrics], useFactory: startBroker },
    { provide: ClusterHealth, inject: [HealthIndicatorService, ClusterContext], useFactory: clusterHealthFor },
  ],
  exports: [Broker, ClusterContext, ClusterHealth],
})
export class ClusterModule implements OnApplicationShutdown {
  constructor(
    private readonly cluster: ClusterContext,
    private readonly broker: Broker,
  ) {}

  async onApplicationShutdown(): Promise<void> {
    this.broker.stop();
    await this.cluster.close();
  }
}

function clusterHealthFor(indicators: HealthIndicatorService, cluster: ClusterContext): ClusterHealth {
  return cluster.shards === null ? new NoClusterHealth() : new RedisHealth(indicators, cluster.shards, cluster.nodeId);
}

async function openCluster(config: GatewayConfig, metrics: GatewayMetrics): Promise<ClusterContext> {
  const names = new ClusterNames(config.redisPrefix);
  if (config.redisUrl === null) return new ClusterContext(null, names, config.nodeId, null);
  const logger = new Logger(ClusterModule.name);
  const clusterProblem = await checkRedisCluster(config.redisUrl);
  if (clusterProblem !== null) throw new ConfigError([clusterProblem]);
  const link = new RedisLink(config.redisUrl, metrics, config.nodeId, config.redisWait);
  const shards = new RedisShards(
    link,
    config.redisShards.map((url, i) => new RedisLink(url, metrics, config.nodeId, config.redisWait, String(i + 1))),
  );
  const liveness = new NodeLiveness(link, names, config.nodeId);
  const opened = await Promise.all(shards.all.map((one) => one.open(STARTUP_WAIT_MS)));
  if (opened[0]) {
    const closeAll = () => Promise.all(shards.all.map((one) => one.close()));
    if (!(await liveness.claim())) {
      await closeAll();
      throw new ConfigError([
        `NODE_ID: "${config.nodeId}" is held by a live node (node ids must be unique among live nodes)`,
      ]);
    }
    const problem = await checkShardList(
      link,
      names,
      config.nodeId,
      config.redisShards.length === 0 ? [] : shards.data,
    );
    if (problem !== null) {
      await liveness.stop();
      await closeAll();
      throw new ConfigError([problem]);
    }
    await warnUnlessNoEviction(link, logger);
  } else {
    logger.warn({
      msg: 'redis not reachable at start: running with Redis down, retrying',
      redis: link.address,
      cause: link.lastCause,
    });
  }
  liveness.start();
  logger.log({
    msg: 'cluster mode',
    node_id: config.nodeId,
    prefix: config.redisPrefix,
    redis: link.address,
    redis_status: link.isUp ? 'up' : 'down',
    ...(config.redisShards.length > 0 && {
      shards: shards.data.map((one, i) => ({ address: one.address, status: opened[i + 1] ? 'up' : 'down' })),
    }),
  });
  return new ClusterContext(shards, names, config.nodeId, liveness);
}

/**
 * SPEC §13.4: every node lists the same shards in the same order, as the
 * control instance records them; the list is recorded by the first node,
 * and again by a node that finds no other alive (changing the shards is
 * maintenance: every node stopped). Null when this node's list agrees.
 */
async function checkShardList(
  control: RedisLink,
  names: ClusterNames,
  nodeId: string,
  shards: readonly RedisLink[],
): Promise<string | null> {
  const redis = control.command;
  const mine = JSON.stringify(shards.map((one) => one.address));
  if ((await redis.set(names.shardList, mine, 'NX')) !== null) return null;
  const recorded = (await redis.get(names.shardList)) ?? mine;
  if (recorded === mine) return null;
  const others = (await redis.smembers(names.nodes)).filter((node) => node !== nodeId);
  const alive = others.length === 0 ? [] : await redis.exists(...others.map((node) => names.alive(node)));
  if (alive === 0 || others.length === 0) {
    await redis.set(names.shardList, mine);
    return null;
  }
  return `REDIS_SHARDS: this node lists ${describeShards(mine)}, the running nodes ${describeShards(recorded)} (every node must list the same shards in the same order; changing them means stopping every node)`;
}

function describeShards(list: string): string {
  const addresses = JSON.parse(list) as string[];
  return addresses.length === 0 ? 'none (everything on REDIS_URL)' : addresses.join(' ');
}

async function startBroker(cluster: ClusterContext, metrics: GatewayMetrics): Promise<Broker> {
  if (cluster.shards === null) return new MemoryBroker();
  const broker = new RedisBroker(cluster.shards, cluster.names, cluster.nodeId, metrics);
  await broker.start();
  return broker;
}

/**
 * SPEC §13.5: a `redis+cluster://` URL must name a Redis Cluster of Redis
 * 7.0 or later (sharded pub/sub). Asked of the first seed that answers; null
 * when it is one, or when no seed answers (the node then starts with Redis
 * down, as for any REDIS_URL).
 */
async function checkRedisCluster(url: string): Promise<string | null> {
  const target = redisTargetOf(url);
  if (target.kind !== 'cluster') return null;
  const { seeds, username, password, tls } = target.options;
  for (const seed of seeds) {
    const redis = new Redis({
      ...seed,
      ...(username !== undefined && { username }),
      ...(password !== undefined && { password }),
      ...(tls !== undefined && { tls }),
      lazyConnect: true,
      connectTimeout: 2000,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    redis.on('error', () => undefined); // a seed that does not answer: the next one is asked
    try {
      await redis.connect();
      const info = await redis.info();
      const version = /^redis_version:(\d+)\./m.exec(info)?.[1];
      if (!/^cluster_enabled:1\r?$/m.test(info))
        return `REDIS_URL: ${seed.host}:${seed.port} is not a Redis Cluster node (cluster_enabled is not 1): use redis:// for one Redis`;
      if (version !== undefined && Number(version) < 7)
        return `REDIS_URL: a Redis Cluster needs Redis 7.0 or later (sharded pub/sub); ${seed.host}:${seed.port} runs ${/^redis_version:(\S+)/m.exec(info)?.[1]}`;
      return null;
    } catch {
      continue;
    } finally {
      redis.disconnect();
    }
  }
  return null;
}

/** SPEC §11: Redis must not evict our keys; managed Redis may refuse CONFIG, which is fine. */
async function warnUnlessNoEviction(link: RedisLink, logger: Logger): Promise<void> {
  try {
    const reply = (await link.command.config('GET', 'maxmemory-policy')) as string[];
    if (reply[1] !== undefined && reply[1] !== 'noeviction') {
      logger.warn({
        msg: 'redis maxmemory-policy is not noeviction: lattice and presence keys may be evicted',
        policy: reply[1],
      });
    }
  } catch {
    logger.debug({ msg: 'redis CONFIG GET refused: maxmemory-policy not checked' });
  }
}
