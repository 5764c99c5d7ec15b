import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { RedisServer, clusterNodeArgs, redisCall, redisCommand, redisInfo, untilClusterOk } from './redis-server';
import { waitFor } from './wait';

/** Redis topologies beyond one server, built from {@link RedisServer}s (SPEC §13.4, §13.5). */

const HOST = '127.0.0.1';
const run = promisify(execFile);

/** Several independent Redis (SPEC §13.4 shards). */
export interface RedisShards {
  readonly servers: readonly RedisServer[];
  /** `redis://` URL of each shard, in order. */
  readonly urls: readonly string[];
  /** Kill every server (by PID). */
  stop(): Promise<void>;
}

/** `n` independent data servers, each on a free port; stops those it started if one fails. */
export async function startShards(n: number): Promise<RedisShards> {
  const servers = await startServers(n, async () => []);
  return { servers, urls: servers.map((s) => s.url), stop: () => killAll(servers) };
}

export interface RedisClusterOptions {
  /** Replicas per primary (`--cluster-replicas`): 0, or 1 for failover tests (twice the processes). */
  readonly replicasPerPrimary?: number;
  /** `cluster-node-timeout`: how long a primary may be silent before its replica takes over. */
  readonly nodeTimeoutMs?: number;
  /** Bound on forming the cluster, every node ok (and every replica in sync). */
  readonly formMs?: number;
}

/** A slot range and the port of the primary serving it. */
export interface SlotRange {
  readonly first: number;
  readonly last: number;
  readonly port: number;
}

/**
 * A Redis Cluster on loopback (SPEC §13.5): `redis-server --cluster-enabled
 * yes` processes on free ports, formed with `redis-cli --cluster create`
 * (equal slot ranges over the primaries). Start with {@link startRedisCluster}.
 */
export class RedisCluster {
  private constructor(readonly nodes: readonly RedisServer[]) {}

  /** Seed addresses, e.g. for ioredis `new Cluster(seeds)`. */
  get seeds(): Array<{ host: string; port: number }> {
    return this.nodes.map((node) => ({ host: HOST, port: node.port }));
  }

  /** `redis+cluster://` URL naming every node as a seed. */
  get url(): string {
    return `redis+cluster://${this.nodes.map((node) => `${HOST}:${node.port}`).join(',')}`;
  }

  /** Form a cluster of `primaries` primaries; see {@link startRedisCluster}. */
  static async start(primaries: number, options: RedisClusterOptions = {}): Promise<RedisCluster> {
    const replicas = options.replicasPerPrimary ?? 0;
    const timeout = ['--cluster-node-timeout', String(options.nodeTimeoutMs ?? 2000)];
    const args = async (): Promise<string[]> => [...(await clusterNodeArgs()), ...timeout];
    const cluster = new RedisCluster(await startServers(primaries * (1 + replicas), args));
    try {
      await cluster.form(replicas, options.formMs ?? 20_000);
    } catch (err) {
      await cluster.stop();
      throw err;
    }
    return cluster;
  }

  /** The node on `port` (to kill, pause or restart it). */
  node(port: number): RedisServer {
    const node = this.nodes.find((n) => n.port === port);
    if (node === undefined) throw new Error(`no cluster node on port ${port}`);
    return node;
  }

  /** The slot ranges and their primaries, as the node on `askPort` (default: the first that answers) sees them. */
  async slotRanges(askPort?: number): Promise<SlotRange[]> {
    for (const port of askPort === undefined ? this.nodes.map((n) => n.port) : [askPort]) {
      const reply = await redisCommand(port, ['CLUSTER', 'SLOTS']);
      if (Array.isArray(reply))
        return (reply as Array<[number, number, [string, number]]>)
          .map(([first, last, [, primaryPort]]) => ({ first, last, port: Number(primaryPort) }))
          .sort((a, b) => a.first - b.first);
    }
    throw new Error('no cluster node answers CLUSTER SLOTS');
  }

  /** Port of the primary serving `slot`, as the node on `askPort` (default: any) sees it. */
  async ownerOf(slot: number, askPort?: number): Promise<number> {
    const range = (await this.slotRanges(askPort)).find((r) => r.first <= slot && slot <= r.last);
    if (range === undefined) throw new Error(`slot ${slot} is not served`);
    return range.port;
  }

  /**
   * Move `slot` to the primary on `toPort` the way `redis-cli --cluster
   * reshard` does: SETSLOT IMPORTING on the target, MIGRATING on the source,
   * MIGRATE its keys in batches, then SETSLOT NODE on the target, the source
   * and every other primary. Resolves once every node names the target as the
   * slot's owner; rejects after `ms`.
   */
  async migrateSlot(slot: number, toPort: number, ms = 5000): Promise<void> {
    const fromPort = await this.ownerOf(slot);
    if (fromPort === toPort) return;
    const [fromId, toId] = await Promise.all([nodeId(fromPort), nodeId(toPort)]);
    await redisCall(toPort, ['CLUSTER', 'SETSLOT', String(slot), 'IMPORTING', fromId]);
    await redisCall(fromPort, ['CLUSTER', 'SETSLOT', String(slot), 'MIGRATING', toId]);
    for (;;) {
      const keys = (await redisCall(fromPort, ['CLUSTER', 'GETKEYSINSLOT', String(slot), '100'])) as string[];
      if (keys.length === 0) break;
      await redisCall(fromPort, ['MIGRATE', HOST, String(toPort), '', '0', '5000', 'KEYS', ...keys]);
    }
    const primaries = [...new Set((await this.slotRanges()).map((r) => r.port))];
    const others = primaries.filter((port) => port !== fromPort && port !== toPort);
    for (const port of [toPort, fromPort, ...others])
      await redisCall(port, ['CLUSTER', 'SETSLOT', String(slot), 'NODE', toId]);
    const owners = new Map<number, number | string>();
    await waitFor(
      async () => {
        for (const node of this.nodes)
          owners.set(node.port, await this.ownerOf(slot, node.port).catch((err: Error) => err.message));
        return [...owners.values()].every((owner) => owner === toPort);
      },
      () => `every node to name ${toPort} as the owner of slot ${slot}; they name ${JSON.stringify([...owners])}`,
      ms,
      20,
    );
  }

  /** Kill every node (by PID). */
  async stop(): Promise<void> {
    await killAll(this.nodes);
  }

  private async form(replicas: number, ms: number): Promise<void> {
    const addresses = this.nodes.map((node) => `${HOST}:${node.port}`);
    const create = ['--cluster', 'create', ...addresses, '--cluster-replicas', String(replicas), '--cluster-yes'];
    await run('redis-cli', create, { timeout: ms }).catch((err: Error & { stdout?: string }) => {
      throw new Error(`redis-cli --cluster create failed: ${err.message} ${err.stdout ?? ''}`);
    });
    const ports = this.nodes.map((node) => node.port);
    await untilClusterOk(ports, ms);
    if (replicas > 0) await untilReplicasInSync(ports, ms);
  }
}

/**
 * A Redis Cluster of `primaries` primaries (and `replicasPerPrimary` replicas
 * each), every node on a free port; resolves once `cluster_state:ok` on every
 * node (and every replica's link up), within `formMs`. Stops what it started
 * if forming fails.
 */
export function startRedisCluster(primaries = 3, options: RedisClusterOptions = {}): Promise<RedisCluster> {
  return RedisCluster.start(primaries, options);
}

/** `count` data servers with `args()` each (started one by one, so free ports differ); all or none. */
async function startServers(count: number, args: () => Promise<string[]>): Promise<RedisServer[]> {
  const servers: RedisServer[] = [];
  try {
    while (servers.length < count) servers.push(await RedisServer.start(await args()));
  } catch (err) {
    await killAll(servers);
    throw err;
  }
  return servers;
}

async function killAll(servers: readonly RedisServer[]): Promise<void> {
  await Promise.all(servers.map((server) => server.kill()));
}

async function nodeId(port: number): Promise<string> {
  return String(await redisCall(port, ['CLUSTER', 'MYID']));
}

async function untilReplicasInSync(ports: readonly number[], ms: number): Promise<void> {
  const links = new Map<number, string>();
  await waitFor(
    async () => {
      for (const port of ports) {
        const info = await redisInfo(port, 'replication');
        if (/role:slave/.test(info)) links.set(port, /master_link_status:(\w+)/.exec(info)?.[1] ?? '?');
      }
      return links.size > 0 && [...links.values()].every((link) => link === 'up');
    },
    () => `every replica's link up; seen ${JSON.stringify([...links])}`,
    ms,
    20,
  );
}
