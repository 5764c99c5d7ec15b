import { ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Redis from 'ioredis';
import { freePort } from './ports';
import { waitFor, within } from './wait';

/**
 * The one place tests start `redis-server` processes (a data server, a
 * sentinel, a cluster node: redis-topologies.ts and redis-sentinel.ts build
 * on it), and one-shot commands to them. Every process is on 127.0.0.1 on a
 * free port and stopped by its PID; whatever a test leaves running is killed,
 * and the folders removed, when the jest process exits.
 */

const HOST = '127.0.0.1';

/** Processes started and not yet seen exiting, and folders made: cleaned up at exit. */
const running = new Set<ChildProcess>();
const folders = new Set<string>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
  for (const dir of folders) rmSync(dir, { recursive: true, force: true });
});

/** A data server's options before the caller's: nothing written to disk unless asked, no eviction. */
const DATA_ARGS = ['--bind', HOST, '--save', '', '--appendonly', 'no', '--maxmemory-policy', 'noeviction'];

/**
 * One `redis-server` process on a fixed port, started (again) with the same
 * arguments. A data server ({@link RedisServer.start}) has a folder of its own:
 * nothing is written there unless the test asks for a snapshot
 * ({@link snapshot}); a restart then comes back with that snapshot's data (a
 * rollback, SPEC §13.1), else empty.
 */
export class RedisServer {
  private child: ChildProcess | null = null;

  private constructor(
    readonly port: number,
    private readonly args: readonly string[],
    /** Its own folder (the `--dir`), or null for a process configured by its caller. */
    private readonly dir: string | null,
  ) {}

  get url(): string {
    return `redis://${HOST}:${this.port}`;
  }

  /**
   * A data server on a free port, resolved once it answers PING. `extraArgs`:
   * more `redis-server` options after the defaults (a later option wins), e.g.
   * `['--replicaof', '127.0.0.1', String(port)]`.
   */
  static async start(extraArgs: readonly string[] = []): Promise<RedisServer> {
    const port = await freePort();
    const dir = mkdtempSync(join(tmpdir(), 'gateway-redis-'));
    folders.add(dir);
    const server = new RedisServer(port, ['--port', String(port), ...DATA_ARGS, '--dir', dir, ...extraArgs], dir);
    await server.restart();
    return server;
  }

  /** A process with exactly `args` then `--port <port>` (e.g. a sentinel: `[conf, '--sentinel']`). */
  static async startWithArgs(port: number, args: readonly string[]): Promise<RedisServer> {
    const server = new RedisServer(port, [...args, '--port', String(port)], null);
    await server.restart();
    return server;
  }

  /**
   * A one-node Redis Cluster (`cluster-enabled`, all 16384 slots on it): it
   * serves every key, and refuses a script whose keys are not all in one
   * slot (SPEC §13.3). Resolves once the cluster state is ok.
   */
  static async startOneNodeCluster(): Promise<RedisServer> {
    const server = await RedisServer.start(await clusterNodeArgs());
    await redisCall(server.port, ['CLUSTER', 'ADDSLOTSRANGE', '0', '16383']);
    await untilClusterOk([server.port], 5000);
    return server;
  }

  /** Start (again) on the same port and resolve once it answers PING; rejects (and kills it) after `ms`. */
  async restart(ms = 5000): Promise<void> {
    const child = spawn('redis-server', this.args, { stdio: 'ignore' });
    this.child = child;
    running.add(child);
    child.once('exit', () => running.delete(child));
    const failed = new Promise<never>((_, reject) => {
      child.once('error', (err) => reject(new Error(`redis-server could not start: ${err.message}`)));
      child.once('exit', (code, signal) =>
        reject(new Error(`redis-server on port ${this.port} exited at start (${signal ?? `code ${code}`})`)),
      );
    });
    const answers = waitFor(async () => (await redisCommand(this.port, ['PING'])) === 'PONG', 'PONG', ms, 20);
    try {
      await within(Promise.race([answers, failed]), `redis-server on port ${this.port} to answer PING`, ms);
    } catch (err) {
      await this.kill();
      throw err;
    }
  }

  /**
   * Write a snapshot now (`SAVE`): a later {@link kill} + {@link restart}
   * brings Redis back with exactly this data, as a restart from an RDB
   * snapshot (or a failover to a replica that lagged) does.
   */
  async snapshot(): Promise<void> {
    await redisCall(this.port, ['SAVE']);
  }

  /** Forget the snapshot: the next restart comes back empty. */
  dropSnapshot(): void {
    if (this.dir !== null) rmSync(join(this.dir, 'dump.rdb'), { force: true });
  }

  /** SIGKILL by PID (also ends a paused process) and wait for the exit. */
  async kill(): Promise<void> {
    const child = this.child;
    this.child = null;
    if (child === null || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await within(exited, `redis-server on port ${this.port} to exit`, 5000);
  }

  /** SIGSTOP: every connection stays open, nothing is answered. */
  pause(): void {
    this.child?.kill('SIGSTOP');
  }

  resume(): void {
    this.child?.kill('SIGCONT');
  }
}

/**
 * The options of a Redis Cluster node: its `nodes.conf` in its own folder, and
 * its cluster bus on a free port of its own (the default, port + 10000, may be
 * taken or above 65535).
 */
export async function clusterNodeArgs(): Promise<string[]> {
  const busPort = await freePort();
  return ['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-port', String(busPort)];
}

/** One command on a short-lived connection to the node on `port`; rejects with the node's error or a connect failure. */
export async function redisCall(port: number, args: readonly string[]): Promise<unknown> {
  const client = new Redis({
    host: HOST,
    port,
    lazyConnect: true,
    retryStrategy: () => null,
    maxRetriesPerRequest: 0,
    connectTimeout: 1000,
    enableReadyCheck: false,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return await client.call(args[0], ...args.slice(1));
  } finally {
    client.disconnect();
  }
}

/** {@link redisCall}, or null when the node does not answer or answers an error. */
export async function redisCommand(port: number, args: readonly string[]): Promise<unknown> {
  return redisCall(port, args).catch(() => null);
}

/** `INFO <section>` of the node on `port`; empty when it does not answer. */
export async function redisInfo(port: number, section: string): Promise<string> {
  const reply = await redisCommand(port, ['INFO', section]);
  return typeof reply === 'string' ? reply : '';
}

/** The first word of ROLE (`master`, `slave`, `sentinel`), or null when the node does not answer. */
export async function redisRole(port: number): Promise<string | null> {
  const reply = await redisCommand(port, ['ROLE']);
  return Array.isArray(reply) ? String(reply[0]) : null;
}

/** Resolves once every node on `ports` reports `cluster_state:ok`; rejects after `ms` naming those that do not. */
export async function untilClusterOk(ports: readonly number[], ms: number): Promise<void> {
  const states = new Map<number, string>();
  await waitFor(
    async () => {
      for (const port of ports) {
        const info = await redisCommand(port, ['CLUSTER', 'INFO']);
        states.set(port, /cluster_state:(\w+)/.exec(String(info))?.[1] ?? 'no answer');
      }
      return [...states.values()].every((state) => state === 'ok');
    },
    () => `cluster_state:ok on every node; seen ${JSON.stringify(Object.fromEntries(states))}`,
    ms,
    20,
  );
}
