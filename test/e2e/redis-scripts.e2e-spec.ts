import { Logger } from '@nestjs/common';
import Redis from 'ioredis';
import { RedisActivity } from '../../src/activity/redis-activity';
import { LocalSessionStore } from '../../src/resume/session-store';
import { ClusterNames, partitionOf } from '../../src/cluster/channels';
import { RedisLink } from '../../src/cluster/redis-link';
import { RedisShards } from '../../src/cluster/redis-shards';
import { GONE, ORPHANED, heldBy } from '../../src/cluster/whereabouts';
import { LatticeBody, parseLatticeBody } from '../../src/lattice/lattice-body';
import { COMPACT_AFTER_ENTRIES, LatticeLog } from '../../src/lattice/lattice-log';
import { GatewayMetrics } from '../../src/metrics/gateway-metrics';
import { Identity } from '../../src/protocol/identity';
import { TopicLog } from '../../src/pubsub/topic-log';
import { RedisResumeRate } from '../../src/resume/redis-resume-rate';
import { SessionStart, SessionSubscriptions } from '../../src/resume/session-record';
import { SessionRecords } from '../../src/resume/session-records';
import { RedisUserSessions } from '../../src/resume/redis-user-sessions';
import { untilRedisHas } from './harness/cluster-nodes';
import { RedisServer } from './harness/redis-server';
import { within } from './harness/wait';

/**
 * SPEC §13.3, checked by Redis itself: every Lua script of cluster mode runs
 * once against a one-node Redis Cluster (all 16384 slots on one
 * `redis-server`), which refuses a script whose declared keys span two slots
 * (CROSSSLOT) and, since every script carries a `#!lua` shebang, one that
 * touches a key outside its declared keys' slot.
 *
 * Every script is listed here and run at least once; a new one must be
 * added, so none escapes the check.
 */
const SCRIPTS = [
  'gatewayTopicAppend',
  'gatewayTopicRead',
  'gatewayLatticeAppend',
  'gatewayLatticeRead',
  'gatewayLatticeCompact',
  'gatewayResumeRead',
  'gatewayResumeCount',
  'gatewayDueMembers',
  'gatewaySessionAssert',
  'gatewaySessionLeave',
  'gatewaySessionClaim',
  'gatewaySessionAuth',
  'gatewaySessionTakeover',
  'gatewaySessionOrphan',
  'gatewaySessionEndOrphan',
  'gatewaySessionEditOrphan',
  'gatewaySessionEnded',
  'gatewaySessionReleased',
  'gatewaySessionWriteStart',
  'gatewaySessionWriteChange',
  'gatewaySessionRevoke',
  'gatewaySessionRevokeUser',
  'gatewaySessionWatchUserOrphans',
];
/** Run in a pipeline (SessionRecords' per-tick flush), so not timed by name: their effect is checked instead. */
const PIPELINED = ['gatewaySessionWriteStart', 'gatewaySessionWriteChange'];

/** Two names in different partitions (so in different slots). */
function namesInTwoPartitions(): [string, string] {
  const first = 'a';
  for (let i = 0; ; i++) if (partitionOf(`b${i}`) !== partitionOf(first)) return [first, `b${i}`];
}

const startOf = (connectionId: string, userId: string, digest: string): SessionStart => ({
  connectionId,
  digest,
  userId,
  authJson: JSON.stringify({ user_id: userId }),
  handlerName: 'default',
  windowEndAt: 0,
});

const subscriptionsOf = (topics: string[], watch: string[] | null = null): SessionSubscriptions => ({
  topics: new Map(topics.map((topic) => [topic, { offset: 0, epoch: null }])),
  namespaces: [],
  watch,
});

function body(json: unknown): LatticeBody {
  const parsed = parseLatticeBody(json);
  if (!parsed.ok) throw new Error(parsed.message);
  return parsed.value;
}

describe('Redis scripts on a one-node Redis Cluster (SPEC §13.3: one slot per script)', () => {
  let server: RedisServer;
  let redis: Redis;
  let link: RedisLink;
  let metrics: GatewayMetrics;
  const names = new ClusterNames('scripts:');

  /** Node A's activity on `shards` of the spec's names, each user counting `count` connections here. */
  function activityOn(
    shards: RedisShards,
    count: number,
    inactive: (userId: string) => void = () => undefined,
  ): RedisActivity {
    const events = { announce: () => undefined, inactive };
    return new RedisActivity(shards, names, 'nodeA', () => count, events, new LocalSessionStore());
  }
  let topics: TopicLog;
  let lattices: LatticeLog;
  let resumes: RedisResumeRate;

  beforeAll(async () => {
    Logger.overrideLogger(false); // the link's "redis up" line is not this spec's output
    server = await RedisServer.startOneNodeCluster();
    redis = new Redis(server.url);
    metrics = new GatewayMetrics();
    link = new RedisLink(server.url, metrics, 'nodeA');
    const shards = new RedisShards(link);
    // Every store of cluster mode defines its scripts on the link; those with timers are stopped before
    // the link is up, so that nothing runs in the background.
    topics = new TopicLog(shards, names, 'nodeA', 10, 60_000, 1 << 20);
    lattices = new LatticeLog(shards, names, 'nodeA', 60_000);
    resumes = new RedisResumeRate(new RedisShards(link), names);
    new RedisUserSessions(new RedisShards(link), names);
    new SessionRecords(shards, names, 'nodeA', 10_000, () => []).stop();
    await activityOn(shards, 0).stop();
    if (!(await link.open(5000))) throw new Error(`the link did not come up on ${server.url}`);
  }, 20_000);

  afterAll(async () => {
    await link?.close();
    redis?.disconnect();
    await server?.kill();
  });

  /** Run `step`, then what Redis counted as errors meanwhile (a script's first EVALSHA answering NOSCRIPT is not one). */
  async function redisErrorsOf(step: () => Promise<void>): Promise<string[]> {
    await redis.config('RESETSTAT');
    await step();
    const stats = String(await redis.info('errorstats'));
    return stats
      .split(/\r?\n/)
      .filter((line) => line.startsWith('errorstat_') && !line.startsWith('errorstat_NOSCRIPT'));
  }

  it('every script is listed here', () => {
    expect([...link.scripts.keys()].sort()).toEqual([...SCRIPTS].sort());
  });

  it('Redis refuses a script that declares keys of two partitions, and one that touches an undeclared key of another', async () => {
    const [a, b] = namesInTwoPartitions();
    const declared = link.script('probeDeclared', 2, `return redis.call('EXISTS', KEYS[1], KEYS[2])`);
    await expect(declared([names.topicPosition(a), names.topicPosition(b)], [])).rejects.toThrow(/CROSSSLOT/);
    const undeclared = link.script(
      'probeUndeclared',
      1,
      `redis.call('GET', KEYS[1]); return redis.call('GET', ARGV[1])`,
    );
    await expect(undeclared([names.topicPosition(a)], [names.topicPosition(b)])).rejects.toThrow(/same slot/);
    link.scripts.delete('probeDeclared');
    link.scripts.delete('probeUndeclared');
  });

  it('topic history: append and read', async () => {
    const errors = await redisErrorsOf(async () => {
      const message = await topics.append('room.1', Buffer.from('{"n":1}'));
      const read = await topics.read('room.1', 0);
      expect(read).toMatchObject({ epoch: message.epoch, offset: 1 });
    });
    expect(errors).toEqual([]);
  });

  it('lattice log: append, read and compact', async () => {
    const errors = await redisErrorsOf(async () => {
      for (let i = 0; i <= COMPACT_AFTER_ENTRIES + 1; i++)
        await lattices.append('ns.1', { atMs: Date.now(), body: body({ shared: { k: { n_counter: i } } }) });
      await lattices.compact('ns.1');
      const contents = await lattices.read('ns.1');
      expect(contents.position?.version).toBe(COMPACT_AFTER_ENTRIES + 2);
    });
    expect(errors).toEqual([]);
  });

  it('resume rate: read and count', async () => {
    const errors = await redisErrorsOf(async () => {
      expect(await resumes.admit('cid1')).toBe(0);
      resumes.resumed('cid1');
      for (let i = 0; (await redis.get(names.resumeRate('cid1'))) !== '1'; i++)
        if (i > 100) throw new Error('the resume count never reached Redis');
        else await new Promise((resolve) => setTimeout(resolve, 10));
    });
    expect(errors).toEqual([]);
  });

  it('activity (SPEC §8): a connection counted, its deadline claimed, its departure', async () => {
    const errors = await redisErrorsOf(async () => {
      let claimed: (userId: string) => void = () => undefined;
      const inactive = new Promise<string>((resolve) => (claimed = resolve));
      const activity = activityOn(new RedisShards(link), 1, (userId) => claimed(userId));
      try {
        await activity.connected('ann', 1, 'Gateway+json e30=', 'default'); // a 1 ms window: due at once
        expect(await within(inactive, "ann's deadline claimed", 5000)).toBe('ann');
        await activity.disconnected('ann');
        expect(await redis.exists(names.user('ann'))).toBe(0); // inactive, no connection left: offline
      } finally {
        await activity.stop();
      }
    });
    expect(errors).toEqual([]);
  });

  it("activity (SPEC §14): a refreshed identity written to the user's hash, and no hash made for a user not there", async () => {
    const errors = await redisErrorsOf(async () => {
      const activity = activityOn(new RedisShards(link), 1);
      const renewed = new Identity('bea', '{"user_id":"bea","plan":"pro"}');
      try {
        await activity.connected('bea', 600_000, 'Gateway+json e30=', 'default');
        await activity.connected('cyd', 600_000, 'Gateway+json e30=', 'default');
        activity.refreshed(renewed);
        await untilRedisHas(
          redis,
          async (r) => (await r.hget(names.user('bea'), 'auth')) === renewed.authorization,
          "bea's refreshed identity",
        );
        // Gone from Redis meanwhile: not written. cyd's refresh, run after it on the same link, is the barrier.
        await redis.del(names.user('bea'));
        activity.refreshed(renewed);
        activity.refreshed(new Identity('cyd', '{"user_id":"cyd","plan":"pro"}'));
        await untilRedisHas(
          redis,
          async (r) => (await r.hget(names.user('cyd'), 'auth')) !== 'Gateway+json e30=',
          "cyd's refreshed identity",
        );
        expect(await redis.exists(names.user('bea'))).toBe(0);
      } finally {
        await activity.stop();
      }
    });
    expect(errors).toEqual([]);
  });

  it('session records (SPEC §12.5): start, change, takeover, end, orphans edited and ended', async () => {
    const errors = await redisErrorsOf(async () => {
      const a = new SessionRecords(new RedisShards(link), names, 'nodeA', 60_000, () => []);
      const b = new SessionRecords(new RedisShards(link), names, 'nodeB', 60_000, () => []);
      const short = new SessionRecords(new RedisShards(link), names, 'nodeC', 50, () => []); // a 50 ms window
      try {
        await a.writer.started(startOf('nodeA-1', 'ann', 'D1'), subscriptionsOf(['t1']));
        await a.writer.changed('nodeA-1', subscriptionsOf(['t1', 't2']));
        expect(Object.keys(await redis.hgetall(names.session('ann', 'nodeA-1')))).toEqual(
          expect.arrayContaining(['d', 'n', 't:t1', 't:t2']),
        );
        const taken = await b.takeOver('nodeA-1', 'D1', 'default', 'D2');
        expect(taken).toMatchObject({ ok: true, record: { previousHolder: 'nodeA', userId: 'ann' } });
        if (taken.ok) b.writer.adopted(taken.record);
        // Taken from an attached copy, nodeA stays named in the record until it lets its copy go.
        expect(await redis.hexists(names.session('ann', 'nodeA-1'), 'p:nodeA')).toBe(1);
        a.released('nodeA-1', 'ann');
        await untilRedisHas(
          redis,
          async (r) => (await r.hexists(names.session('ann', 'nodeA-1'), 'p:nodeA')) === 0,
          "nodeA's copy let go",
        );
        expect(await b.ended('nodeA-1', 'ann')).toBe(true);
        expect(await b.takeOver('nodeA-1', 'D2', 'default', 'D3')).toEqual({ ok: false, result: 'expired' });

        // Orphans: a node's sessions held by no node, a /v1 command written into one, one ended by a
        // disconnect and one by its window's end.
        await short.writer.started(startOf('nodeC-2', 'bob', 'D4'), subscriptionsOf([]));
        await short.writer.started(startOf('nodeC-3', 'cat', 'D5'), subscriptionsOf([]));
        await a.orphan('nodeC');
        expect(await a.whereIs('nodeC-3')).toEqual(ORPHANED);
        expect(await a.editOrphan('nodeC-3', { op: 'set', field: 'l:ns', value: '1' })).toEqual(ORPHANED);
        expect(await a.editOrphan('nodeC-3', { op: 'end' })).toEqual(ORPHANED);
        expect(await a.whereIs('nodeC-3')).toEqual(GONE);
        await untilRedisHas(
          redis,
          async (r) => (await r.exists(names.session('bob', 'nodeC-2'))) === 0,
          'the window end',
        );
      } finally {
        for (const records of [a, b, short]) records.stop();
      }
    });
    expect(errors).toEqual([]);
  });

  it("a user's sessions (SPEC §12.6, endpoint 8): revoked one by one and all at once, orphans watching", async () => {
    const errors = await redisErrorsOf(async () => {
      const a = new SessionRecords(new RedisShards(link), names, 'nodeA', 60_000, () => []);
      const d = new SessionRecords(new RedisShards(link), names, 'nodeD', 60_000, () => []);
      const users = new RedisUserSessions(new RedisShards(link), names);
      try {
        await a.writer.started(startOf('nodeA-4', 'dan', 'D6'), subscriptionsOf([]));
        await a.writer.started(startOf('nodeA-5', 'dan', 'D7'), subscriptionsOf([]));
        await d.writer.started(startOf('nodeD-6', 'eve', 'D8'), subscriptionsOf([], [])); // watching users
        d.stop();
        await a.orphan('nodeD');
        await users.watchForOrphans('eve', ['bob']);
        expect(await redis.hget(names.session('eve', 'nodeD-6'), 'wu')).toBe('["bob"]');
        expect(await users.revoke('nodeA-4')).toEqual({ where: heldBy('nodeA'), previousHolders: [] });
        // A held session stays listed until its holder confirms the end: revoked again, its holder is named again.
        // (In the order of the user's set: no order is promised.)
        expect([...(await users.revokeUser('dan'))].sort()).toEqual([
          ['nodeA-4', ['nodeA']],
          ['nodeA-5', ['nodeA']],
        ]);
      } finally {
        for (const records of [a, d]) records.stop();
      }
    });
    expect(errors).toEqual([]);
  });

  it('every script ran', async () => {
    const counts = await metrics.redisCommandDuration.get();
    const ran = counts.values
      .filter((v) => v.metricName?.endsWith('_count') && v.value > 0)
      .map((v) => String(v.labels.command));
    expect(SCRIPTS.filter((name) => !ran.includes(name) && !PIPELINED.includes(name))).toEqual([]);
  });
});
