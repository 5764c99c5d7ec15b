import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { freePort } from './ports';
import { RedisServer, redisCall, redisCommand, redisInfo, redisRole } from './redis-server';
import { waitFor } from './wait';

const HOST = '127.0.0.1';
const SENTINEL_COUNT = 3;
/** Pause between two looks at the processes in a bounded wait. */
const POLL_MS = 20;
const QUORUM = 2;

/** Timings of the sentinels: low, so that a failover completes in a few seconds. */
export interface SentinelTimings {
  /** `down-after-milliseconds`: silence before a sentinel thinks the primary is down. */
  readonly downAfterMs: number;
  /** `failover-timeout`: a failed election is retried after twice this. */
  readonly failoverTimeoutMs: number;
}

export interface RedisSentinelOptions extends Partial<SentinelTimings> {
  readonly masterName?: string;
  /** Extra `redis-server` arguments of the primary and the replica, e.g. `['--min-replicas-to-write', '1']`. */
  readonly dataArgs?: readonly string[];
}

/** What the sentinels answer after a failover. */
export interface Promotion {
  /** Port of the new primary. */
  readonly port: number;
  /** Epoch ms when the first sentinel named it. */
  readonly promotedAt: number;
}

/**
 * A Sentinel-managed Redis on loopback for tests (SPEC §13.2): a primary, one
 * replica and three sentinels (`redis-server <conf> --sentinel`, quorum 2),
 * each on a free port and stopped by its PID. Replicas authenticate to their
 * primary as an ACL user of their own, so a test can cut the replica off (the
 * primary turns that user off and drops the replica: it then misses writes)
 * and restore it; a sentinel re-pointing the replica cannot undo that (a
 * proxy on the replication link could be, within its 10 s INFO period).
 * Start-up waits until the replica's sync is online and every sentinel
 * knows the replica and the two other sentinels: a sentinel promotes a
 * replica that never synced, and elects no leader alone. The sentinels'
 * config stays in a temporary folder, removed by `close()`; each data node has
 * its own (a replica's sync RDB), and none loads a snapshot when it restarts.
 */
export class RedisSentinel {
  /** Port → process of the data nodes (the primary and the replica, whichever role each has now). */
  private readonly data = new Map<number, RedisServer>();
  private readonly sentinels: RedisServer[] = [];
  private killed: RedisServer | null = null;
  private paused: RedisServer | null = null;

  private constructor(
    readonly masterName: string,
    private readonly dir: string,
    /** Port of the primary the sentinels were started with, then of the last promotion. */
    private primaryPort: number,
  ) {}

  /** Start everything and resolve once a failover could take place. Closes what it started if start-up fails. */
  static async start(options: RedisSentinelOptions = {}): Promise<RedisSentinel> {
    const timings = { downAfterMs: options.downAfterMs ?? 1000, failoverTimeoutMs: options.failoverTimeoutMs ?? 3000 };
    const dir = mkdtempSync(path.join(tmpdir(), 'gateway-sentinel-'));
    const dataArgs = [...DATA_ARGS, ...(options.dataArgs ?? [])];
    const primary = await RedisServer.start(dataArgs);
    const set = new RedisSentinel(options.masterName ?? 'gwmaster', dir, primary.port);
    try {
      set.data.set(primary.port, primary);
      const replica = await RedisServer.start([...dataArgs, '--replicaof', HOST, String(primary.port)]);
      set.data.set(replica.port, replica);
      await set.untilReplicaOnline(10_000);
      for (let i = 0; i < SENTINEL_COUNT; i++) set.sentinels.push(await set.startSentinel(i, timings));
      await set.untilSentinelsReady(20_000);
    } catch (err) {
      await set.close();
      throw err;
    }
    return set;
  }

  /** `redis+sentinel://` URL of the three sentinels and the master group. */
  get url(): string {
    return this.urlFor(this.masterName);
  }

  /** The same sentinels with another master name (e.g. one they do not monitor). */
  urlFor(masterName: string): string {
    return `redis+sentinel://${this.sentinels.map((s) => `${HOST}:${s.port}`).join(',')}/${masterName}`;
  }

  /** `redis://` URL of the current primary (as of the last start or promotion), for probes. */
  get primaryUrl(): string {
    return `redis://${HOST}:${this.primaryPort}`;
  }

  /** SIGKILL the current primary; resolves its port once it exited. */
  async killPrimary(): Promise<number> {
    const primary = this.data.get(this.primaryPort);
    if (primary === undefined) throw new Error(`no data node on port ${this.primaryPort}`);
    await primary.kill();
    this.killed = primary;
    return primary.port;
  }

  /**
   * Start the killed node again on its port, empty, and make it a replica of
   * the new primary; resolves once it is in sync and every sentinel knows it:
   * a failover could take place again. The sentinels would convert it
   * themselves, but only once it has been up for four publish periods (8 s)
   * and their INFO poll of a replica (every 10 s) has seen it: about 20 s
   * before the sync even starts, which under load outran a 45 s bound. The
   * harness says REPLICAOF at once, as an operator bringing a node back does.
   */
  async restartKilled(ms = 45_000): Promise<void> {
    if (this.killed === null) throw new Error('no killed node to restart');
    const node = this.killed;
    await node.restart();
    this.killed = null;
    await redisCall(node.port, ['REPLICAOF', HOST, String(this.primaryPort)]);
    await this.untilReplicaOnline(ms);
    await this.untilSentinelsReady(ms);
  }

  /**
   * SIGSTOP the current primary: its connections stay open and nothing is
   * answered, as behind a network partition. Resolves its port.
   */
  pausePrimary(): number {
    const primary = this.data.get(this.primaryPort);
    if (primary === undefined) throw new Error(`no data node on port ${this.primaryPort}`);
    primary.pause();
    this.paused = primary;
    return primary.port;
  }

  /** SIGCONT the paused node: it answers again, and the sentinels demote it if they promoted another meanwhile. */
  resumePaused(): void {
    this.paused?.resume();
    this.paused = null;
  }

  /** Names of the clients connected to the data node on `port` (CLIENT LIST), or null when it does not answer. */
  async clientNamesOn(port: number): Promise<string[] | null> {
    const list = await redisCommand(port, ['CLIENT', 'LIST']);
    return typeof list === 'string'
      ? [...list.matchAll(/ name=(\S*)/g)].map((m) => m[1]).filter((name) => name !== '')
      : null;
  }

  /** ROLE of the data node on `port` (`master`, `slave`), or null when it does not answer. */
  roleOn(port: number): Promise<string | null> {
    return redisRole(port);
  }

  /**
   * Resolves once every sentinel names a primary other than `formerPort` and
   * that node answers ROLE as a master; rejects after `ms` with what the
   * sentinels said.
   */
  async awaitPromotion(formerPort: number, ms = 30_000): Promise<Promotion> {
    let promotedAt: number | null = null;
    let answers: Array<number | null> = [];
    const port = await waitFor(
      async () => {
        answers = await Promise.all(this.sentinels.map((s) => masterPortOf(s.port, this.masterName)));
        if (promotedAt === null && answers.some((p) => p !== null && p !== formerPort)) promotedAt = Date.now();
        const named = answers[0];
        const isAgreed = named !== null && named !== formerPort && answers.every((p) => p === named);
        return isAgreed && (await redisRole(named)) === 'master' ? named : undefined;
      },
      () => `the sentinels to promote a new primary (former ${formerPort}); they name ${JSON.stringify(answers)}`,
      ms,
      50,
    );
    this.primaryPort = port;
    return { port, promotedAt: promotedAt ?? Date.now() };
  }

  /** Resolves once the replica has applied every write the primary had when this was called. */
  async untilReplicaCaughtUp(ms = 5000): Promise<void> {
    const target = replicationOffset(await redisInfo(this.primaryPort, 'replication'), 'master_repl_offset');
    if (target < 0) throw new Error(`the primary on ${this.primaryPort} reports no replication offset`);
    const replica = this.replicaPort();
    await waitFor(
      async () => replicationOffset(await redisInfo(replica, 'replication'), 'slave_repl_offset') >= target,
      `the replica on ${replica} to reach offset ${target}`,
      ms,
      POLL_MS,
    );
  }

  /**
   * Cut the replica off its primary (its replication connection is dropped and
   * refused), so writes acknowledged from now on are not on the replica. The
   * sentinels still promote it if the primary dies within about ten
   * down-after periods (their limit on a replica's link-down time).
   */
  async cutReplica(ms = 5000): Promise<void> {
    await redisCommand(this.primaryPort, ['ACL', 'SETUSER', REPLICATION_USER, 'off']);
    await redisCommand(this.primaryPort, ['CLIENT', 'KILL', 'TYPE', 'replica']);
    const replica = this.replicaPort();
    await waitFor(
      async () => /master_link_status:down/.test(await redisInfo(replica, 'replication')),
      `the replica on ${replica} to report its link down`,
      ms,
      POLL_MS,
    );
  }

  /** Let the replica connect to its primary again; resolves once its sync is online. */
  async restoreReplica(ms = 10_000): Promise<void> {
    await redisCommand(this.primaryPort, ['ACL', 'SETUSER', REPLICATION_USER, 'on']);
    await this.untilReplicaOnline(ms);
  }

  /** Stop every process (by PID) and remove the config folder. */
  async close(): Promise<void> {
    await Promise.all([...this.sentinels, ...this.data.values()].map((p) => p.kill()));
    rmSync(this.dir, { recursive: true, force: true });
  }

  private replicaPort(): number {
    const port = [...this.data.keys()].find((p) => p !== this.primaryPort);
    if (port === undefined) throw new Error('no replica');
    return port;
  }

  private async untilReplicaOnline(ms: number): Promise<void> {
    const replica = this.replicaPort();
    // What each side said last, for the failure message (roles, links, replicas).
    const seen = { replica: '', primary: '' };
    const brief = (info: string): string =>
      info
        .split(/\r?\n/)
        .filter((line) => /^(role|master_port|master_link_status|master_sync_in_progress|slave\d+):/.test(line))
        .join(' ');
    await waitFor(
      async () => {
        const [own, primary] = await Promise.all([
          redisInfo(replica, 'replication'),
          redisInfo(this.primaryPort, 'replication'),
        ]);
        seen.replica = brief(own);
        seen.primary = brief(primary);
        return (
          /master_link_status:up/.test(own) &&
          new RegExp(`slave\\d+:ip=[^,]+,port=${replica},state=online`).test(primary)
        );
      },
      () =>
        `the replica on ${replica} to be in sync with the primary on ${this.primaryPort} ` +
        `(replica: ${seen.replica || 'no answer'}; primary: ${seen.primary || 'no answer'})`,
      ms,
      POLL_MS,
    );
  }

  private async startSentinel(index: number, timings: SentinelTimings): Promise<RedisServer> {
    const port = await freePort();
    const conf = path.join(this.dir, `sentinel-${index}.conf`);
    const name = this.masterName;
    writeFileSync(
      conf,
      [
        `port ${port}`,
        `bind ${HOST}`,
        `dir ${this.dir}`,
        `sentinel monitor ${name} ${HOST} ${this.primaryPort} ${QUORUM}`,
        `sentinel down-after-milliseconds ${name} ${timings.downAfterMs}`,
        `sentinel failover-timeout ${name} ${timings.failoverTimeoutMs}`,
        `sentinel parallel-syncs ${name} 1`,
        '',
      ].join('\n'),
    );
    return RedisServer.startWithArgs(port, [conf, '--sentinel']);
  }

  private async untilSentinelsReady(ms: number): Promise<void> {
    await waitFor(
      async () => {
        const views = await Promise.all(this.sentinels.map((s) => sentinelView(s.port, this.masterName)));
        return views.every((v) => v.otherSentinels === SENTINEL_COUNT - 1 && v.replicas === 1);
      },
      'every sentinel to know the replica (up, in sync) and the other sentinels',
      ms,
      POLL_MS,
    );
  }
}

/** The ACL user replicas authenticate as (every data node has it, so roles may swap); cutReplica turns it off. */
const REPLICATION_USER = 'replication';
const REPLICATION_SECRET = 'replication-secret';
/** Replicas that load a sync from the socket (a restarted node comes back empty), and the replication user. */
const DATA_ARGS = [
  ...['--repl-diskless-load', 'swapdb'],
  ...['--user', REPLICATION_USER, 'on', `>${REPLICATION_SECRET}`, '~*', '&*', '+@all'],
  ...['--masteruser', REPLICATION_USER, '--masterauth', REPLICATION_SECRET],
];

function replicationOffset(info: string, field: string): number {
  const match = new RegExp(`^${field}:(\\d+)`, 'm').exec(info);
  return match === null ? -1 : Number(match[1]);
}

async function masterPortOf(sentinelPort: number, name: string): Promise<number | null> {
  const reply = await redisCommand(sentinelPort, ['SENTINEL', 'GET-MASTER-ADDR-BY-NAME', name]);
  return Array.isArray(reply) ? Number(reply[1]) : null;
}

async function sentinelView(sentinelPort: number, name: string): Promise<{ otherSentinels: number; replicas: number }> {
  const [master, replicas] = await Promise.all([
    redisCommand(sentinelPort, ['SENTINEL', 'MASTER', name]),
    redisCommand(sentinelPort, ['SENTINEL', 'REPLICAS', name]),
  ]);
  const fieldsOf = (reply: unknown): string[] => (Array.isArray(reply) ? reply.map(String) : []);
  const field = (fields: string[], key: string): string | undefined =>
    fields.includes(key) ? fields[fields.indexOf(key) + 1] : undefined;
  // A replica the sentinels could promote: seen up, in sync with its primary.
  const healthy = (Array.isArray(replicas) ? replicas : [])
    .map(fieldsOf)
    .filter((r) => field(r, 'flags') === 'slave' && field(r, 'master-link-status') === 'ok');
  return { otherSentinels: Number(field(fieldsOf(master), 'num-other-sentinels') ?? NaN), replicas: healthy.length };
}
