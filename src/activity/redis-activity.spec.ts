import { RedisShards } from '../cluster/redis-shards';
import { Logger } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { ClusterNames } from '../cluster/channels';
import { RedisLink } from '../cluster/redis-link';
import { GatewayMetrics } from '../metrics/gateway-metrics';
import { redisTimeMs } from '../users-lattice/cluster-statuses';
import { LocalSessionStore } from '../resume/session-store';
import { RedisActivity } from './redis-activity';

/** Redis of the test run (`.ci/run` starts one on 6379 when none answers). */
const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

type Status = 'active' | 'inactive' | 'offline';

describe('RedisActivity on Redis: status versions (SPEC §7)', () => {
  const links: RedisLink[] = [];
  const nodes: RedisActivity[] = [];
  beforeAll(() => Logger.overrideLogger(false)); // the links' "redis up" lines are not this spec's output
  afterEach(async () => {
    await Promise.all(nodes.splice(0).map((node) => node.stop()));
    await Promise.all(links.splice(0).map((link) => link.close()));
  });

  async function node(names: ClusterNames, nodeId: string, announced: Array<[Status, number]>): Promise<RedisActivity> {
    const link = new RedisLink(REDIS_URL, new GatewayMetrics(), nodeId);
    if (!(await link.open(3000)))
      throw new Error(`no Redis at ${REDIS_URL}: start one (redis-server) to run this spec`);
    links.push(link);
    const events = {
      announce: (_: string, status: Status, version: number) => void announced.push([status, version]),
      inactive: () => undefined,
    };
    const sessions = new RedisActivity(new RedisShards(link), names, nodeId, () => 1, events, new LocalSessionStore());
    nodes.push(sessions);
    return sessions;
  }

  // A status with a version no greater than the last one is ignored by every watcher (a newer version wins; on a
  // tie `offline` wins, §6.2), so a user who goes offline and comes back within one millisecond must still get a
  // greater version, though its hash (and the `ver` in it) was deleted when it went offline.
  it('a user who went offline and connects again gets a strictly newer version, in the same millisecond too', async () => {
    const names = new ClusterNames(`test:${randomBytes(6).toString('hex')}:`);
    const announced: Array<[Status, number]> = [];
    const a = await node(names, 'nodeA', announced);
    const b = await node(names, 'nodeB', announced);
    for (let round = 0; round < 30; round++) {
      await a.connected('ann', 600_000, 'Gateway+json e30=', 'default');
      await b.removeNode('nodeA'); // nodeA reaped: ann, with no connection left, goes offline
    }
    expect(announced.map(([status]) => status)).toEqual(
      Array.from({ length: 60 }, (_, i) => (i % 2 === 0 ? 'active' : 'offline')),
    );
    const regressions = announced.filter(([, version], i) => i > 0 && version <= announced[i - 1][1]);
    expect(regressions).toEqual([]);
  });

  // Versions are Redis' time (§7's ts_ms), not a counter: many users' changes at once must not push them ahead of
  // it, or after Redis lost its data every node would ignore the new, lower versions for as long as they ran ahead.
  it('keeps versions at Redis time when many users change status at once', async () => {
    const names = new ClusterNames(`test:${randomBytes(6).toString('hex')}:`);
    const announced: Array<[Status, number]> = [];
    const a = await node(names, 'nodeA', announced);
    const b = await node(names, 'nodeB', announced);
    const users = Array.from({ length: 300 }, (_, i) => `u${i}`);
    for (let round = 0; round < 3; round++) {
      await Promise.all(users.map((user) => a.connected(user, 600_000, 'Gateway+json e30=', 'default')));
      await b.removeNode('nodeA');
    }
    const now = await redisTimeMs(links[0]);
    expect(announced).toHaveLength(6 * users.length);
    expect(Math.max(...announced.map(([, version]) => version)) - now).toBeLessThanOrEqual(20); // a counter bumped by every change ran 1,500 ms ahead here
  });
});
