import { spawnSync } from 'node:child_process';
import * as net from 'node:net';
import { RedisServer } from './redis-server';
import { startRedisCluster } from './redis-topologies';

/** Where the cluster specs look for Redis unless TEST_REDIS_URL says otherwise. */
export const DEFAULT_TEST_REDIS_URL = 'redis://127.0.0.1:6379';

/**
 * The Redis of an e2e run (issue 34: `npm test` on a fresh machine). If
 * none answers at TEST_REDIS_URL, a private `redis-server` is started on a
 * free port for the run (nothing kept on disk) and TEST_REDIS_URL points at
 * it; the run's teardown stops it by PID. Without `redis-server` installed,
 * the run fails at once with one line saying what to install.
 */
export async function ensureTestRedis(): Promise<void> {
  await ensureTopology();
  const url = new URL(process.env.TEST_REDIS_URL ?? DEFAULT_TEST_REDIS_URL);
  if (await answersPing(url.hostname, Number(url.port || 6379))) return;
  if (spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).error !== undefined) {
    throw new Error(
      `npm test needs Redis: none answers at ${url.host} and redis-server is not installed (Debian: apt-get install redis-server; or set TEST_REDIS_URL)`,
    );
  }
  const server = await RedisServer.start();
  process.env.TEST_REDIS_URL = server.url;
  // Jest keeps globalThis from globalSetup to globalTeardown (each project has its own hooks).
  started().push(server);
}

/**
 * The Redis topology of the run's cluster specs (SPEC §13.4, §13.5, issue
 * 30's matrix): `TEST_REDIS_TOPOLOGY=shards` starts three private shards for
 * the run and names them in TEST_REDIS_SHARDS, which every test cluster
 * passes as REDIS_SHARDS (REDIS_URL stays the control instance);
 * `TEST_REDIS_TOPOLOGY=cluster` forms a three-primary Redis Cluster and names
 * it in TEST_REDIS_CLUSTER (a `redis+cluster://` URL), which every test
 * cluster passes as REDIS_URL; unset or `one`: one Redis.
 */
async function ensureTopology(): Promise<void> {
  const topology = process.env.TEST_REDIS_TOPOLOGY ?? 'one';
  if (topology === 'one' || process.env.TEST_REDIS_SHARDS !== undefined) return;
  if (topology === 'cluster') {
    if (process.env.TEST_REDIS_CLUSTER !== undefined) return;
    const cluster = await startRedisCluster(3);
    started().push(...cluster.nodes);
    process.env.TEST_REDIS_CLUSTER = cluster.url;
    return;
  }
  if (topology !== 'shards') throw new Error(`TEST_REDIS_TOPOLOGY=${topology}: expected one, shards or cluster`);
  const shards = await Promise.all([0, 1, 2].map(() => RedisServer.start()));
  started().push(...shards);
  process.env.TEST_REDIS_SHARDS = shards.map((server) => server.url).join(' ');
}

/**
 * The Redis settings of the run's test clusters beside REDIS_URL: `{
 * REDIS_SHARDS }` on the shards topology, `{ REDIS_URL }` (the Redis
 * Cluster) on the cluster topology, else nothing.
 */
export function testShardsEnv(): Record<string, string> {
  const shards = process.env.TEST_REDIS_SHARDS;
  const cluster = process.env.TEST_REDIS_CLUSTER;
  if (cluster !== undefined) return { REDIS_URL: cluster };
  return shards === undefined ? {} : { REDIS_SHARDS: shards };
}

/** Stop every redis-server {@link ensureTestRedis} started in this run (globalTeardown). */
export async function stopTestRedis(): Promise<void> {
  await Promise.all(
    started()
      .splice(0)
      .map((server) => server.kill()),
  );
}

function started(): RedisServer[] {
  const holder = globalThis as { gatewayTestRedis?: RedisServer[] };
  return (holder.gatewayTestRedis ??= []);
}

/** One PING over a raw socket: true on +PONG within 1 s. */
function answersPing(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, host);
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1000, () => done(false));
    socket.once('error', () => done(false));
    socket.once('data', (chunk) => done(chunk.toString().startsWith('+PONG')));
    socket.once('connect', () => socket.write('PING\r\n'));
  });
}
