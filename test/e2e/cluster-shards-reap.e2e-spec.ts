import { partitionOf } from '../../src/cluster/channels';
import { jumpHash } from '../../src/cluster/jump-hash';
import { TEST_REDIS_URL, randomPrefix } from './harness/cluster';
import { ProcessCluster, StatusMirror } from './harness/cluster-nodes';
import { FakeUpstream } from './harness/fake-upstream';
import { api } from './harness/http';
import { RedisShards, startShards } from './harness/redis-topologies';

/** A user id whose partition lives on shard `shard` of 3 (SPEC §13.4: jumpHash(p, N)). */
function userOn(shard: number, tag: string): string {
  for (let i = 0; ; i++) if (jumpHash(partitionOf(`${tag}${i}`), 3) === shard) return `${tag}${i}`;
}

/**
 * SPEC §11 "Node death" on shards (§13.4): a node that dies while one shard
 * cannot be reached is reaped at once where Redis can be reached (its users
 * there go offline within the usual 15 s), and on the unreachable shard once
 * that shard answers again. One shard down answers for what lives there only.
 */
describe('cluster: a node reaped while a shard is unreachable (SPEC §11, §13.4)', () => {
  let shards: RedisShards;
  let upstream: FakeUpstream;
  let processes: ProcessCluster;

  beforeAll(async () => {
    shards = await startShards(3);
    upstream = await FakeUpstream.start();
    processes = new ProcessCluster(upstream, TEST_REDIS_URL, randomPrefix(), {
      REDIS_SHARDS: shards.urls.join(' '),
    });
  }, 30_000);

  afterAll(async () => {
    shards?.servers[1].resume();
    await processes?.close();
    await upstream?.close();
    await shards?.stop();
  });

  /**
   * Two nodes; users `near` (shard 0) and `far` (shard 1) connected to the
   * second, watched from the first; shard 1 stopped (every connection stays
   * open, nothing is answered), then the second node ended with `signal`.
   * The shard-1 user stays active while shard 1 is stopped.
   */
  async function endNodeWithShardStopped(tag: string, signal: NodeJS.Signals, nearMs: number): Promise<void> {
    const [a, b] = [await processes.start(`${tag}A`), await processes.start(`${tag}B`)];
    const near = userOn(0, `${tag}near`);
    const far = userOn(1, `${tag}far`);
    await processes.hello(b, near);
    await processes.hello(b, far);
    const watcher = await processes.hello(a, `${tag}watcher`);
    expect((await api(a.apiUrl, 'PUT', `/v1/connection/${watcher.cid}/users`, [near, far])).status).toBe(204);
    const mirror = new StatusMirror(watcher.client);
    await mirror.until(near, 'active', 5000);
    await mirror.until(far, 'active', 5000);

    shards.servers[1].pause();
    b.kill(signal);
    await mirror.until(near, 'offline', nearMs);
    expect(mirror.latest.get(far)?.[1]).toBe('active');

    shards.servers[1].resume();
    await mirror.until(far, 'offline', 30_000);
  }

  it("takes the dead node's users on reachable shards offline at once, and the rest once their shard answers", async () => {
    // Noticed within 15 s (SPEC §11); the stopped shard must not hold back what lives elsewhere.
    await endNodeWithShardStopped('reap', 'SIGKILL', 20_000);
  }, 90_000);

  it("withdraws a draining node's users on reachable shards at once, and the rest once their shard answers", async () => {
    // The drain withdraws its presence at once (SPEC §11), shard by shard.
    await endNodeWithShardStopped('drain', 'SIGTERM', 5000);
  }, 90_000);
});
