import { ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Redis from 'ioredis';
import { freePort } from './ports';
import { within } from './wait';

// test-redis.ts imports it from here.
export { freePort };

/**
 * A dedicated `redis-server` on a free port, for tests that kill or restart
 * Redis (the shared one on 6379 is left alone). Nothing is written to disk
 * unless the test asks for a snapshot ({@link snapshot}): a restart then
 * comes back with that snapshot's data (a rollback, SPEC §13.1), else empty.
 * Stopped by its PID.
 */
export class RedisServer {
  private child: ChildProcess | null = null;
  /** Its own folder: the snapshot `dump.rdb` a restart loads. */
  private readonly dir = mkdtempSync(join(tmpdir(), 'gateway-redis-'));

  private constructor(
    readonly port: number,
    private readonly extraArgs: readonly string[],
  ) {
    process.once('exit', () => rmSync(this.dir, { recursive: true, force: true }));
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** `extraArgs`: more `redis-server` options, e.g. `['--replicaof', '127.0.0.1', String(port)]`. */
  static async start(extraArgs: readonly string[] = []): Promise<RedisServer> {
    const server = new RedisServer(await freePort(), extraArgs);
    await server.restart();
    return server;
  }

  /**
   * A one-node Redis Cluster (`cluster-enabled`, all 16384 slots on it): it
   * serves every key, and refuses a script whose keys are not all in one
   * slot (SPEC §13.3). Resolves once the cluster state is ok.
   */
  static async startOneNodeCluster(): Promise<RedisServer> {
    const server = await RedisServer.start(['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf']);
    const client = new Redis(server.url, { lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.call('CLUSTER', 'ADDSLOTSRANGE', '0', '16383');
      const isOk = async (): Promise<void> => {
        while (!/cluster_state:ok/.test(String(await client.call('CLUSTER', 'INFO'))))
          await new Promise((resolve) => setTimeout(resolve, 20));
      };
      await within(isOk(), `the one-node cluster on port ${server.port} to be ok`, 5000);
    } finally {
      client.disconnect();
    }
    return server;
  }

  /** Start (again) on the same port and resolve once it answers PING. */
  async restart(ms = 5000): Promise<void> {
    const args = [
      '--port',
      String(this.port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--maxmemory-policy',
      'noeviction',
      '--dir',
      this.dir,
      ...this.extraArgs,
    ];
    const child = spawn('redis-server', args, { stdio: 'ignore' });
    this.child = child;
    const failed = new Promise<never>((_, reject) =>
      child.once('error', (err) => reject(new Error(`redis-server could not start: ${err.message}`))),
    );
    await within(Promise.race([this.untilPong(), failed]), `redis-server on port ${this.port} to answer PING`, ms);
  }

  /**
   * Write a snapshot now (`SAVE`): a later {@link kill} + {@link restart}
   * brings Redis back with exactly this data, as a restart from an RDB
   * snapshot (or a failover to a replica that lagged) does.
   */
  async snapshot(): Promise<void> {
    const client = new Redis(this.url, { lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.save();
    } finally {
      client.disconnect();
    }
  }

  /** Forget the snapshot: the next restart comes back empty. */
  dropSnapshot(): void {
    rmSync(join(this.dir, 'dump.rdb'), { force: true });
  }

  /** SIGKILL by PID and wait for the exit. */
  async kill(): Promise<void> {
    const child = this.child;
    this.child = null;
    if (child === null || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL'); // also ends a paused (SIGSTOPped) server
    await within(exited, 'redis-server to exit', 5000);
  }

  /** SIGSTOP: every connection stays open, nothing is answered. */
  pause(): void {
    this.child?.kill('SIGSTOP');
  }

  resume(): void {
    this.child?.kill('SIGCONT');
  }

  private async untilPong(): Promise<void> {
    for (;;) {
      const probe = new Redis(this.url, { lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
      probe.on('error', () => undefined);
      try {
        await probe.connect();
        if ((await probe.ping()) === 'PONG') return;
      } catch {
        // not up yet
      } finally {
        probe.disconnect();
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
}
