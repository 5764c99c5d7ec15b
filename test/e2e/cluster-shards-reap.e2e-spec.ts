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

  it("takes the dead node's users on reachable shards offline at once, and the rest once their shard answers", async () => {
    const [a, b] = [await processes.start('reapA'), await processes.start('reapB')];
    const near = userOn(0, 'near');
    const far = userOn(1, 'far');
    await processes.hello(b, near);
    await processes.hello(b, far);
    const watcher = await processes.hello(a, 'watcher');
    expect((await api(a.apiUrl, 'PUT', `/v1/connection/${watcher.cid}/users`, [near, far])).status).toBe(204);
    const mirror = new StatusMirror(watcher.client);
    await mirror.until(near, 'active', 5000);
    await mirror.until(far, 'active', 5000);

    shards.servers[1].pause(); // every connection stays open, nothing is answered
    b.kill('SIGKILL');
    // Noticed within 15 s (SPEC §11); the silent shard must not hold back what lives elsewhere.
    await mirror.until(near, 'offline', 20_000);
    expect(mirror.latest.get(far)?.[1]).toBe('active');

    shards.servers[1].resume();
    await mirror.until(far, 'offline', 30_000);
  }, 90_000);

  it("withdraws a draining node's users on reachable shards at once, and the rest once their shard answers", async () => {
    const [a, c] = [await processes.start('reapD'), await processes.start('reapE')];
    const near = userOn(0, 'dnear');
    const far = userOn(1, 'dfar');
    await processes.hello(c, near);
    await processes.hello(c, far);
    const watcher = await processes.hello(a, 'dwatcher');
    expect((await api(a.apiUrl, 'PUT', `/v1/connection/${watcher.cid}/users`, [near, far])).status).toBe(204);
    const mirror = new StatusMirror(watcher.client);
    await mirror.until(near, 'active', 5000);
    await mirror.until(far, 'active', 5000);

    shards.servers[1].pause();
    c.kill('SIGTERM'); // the drain withdraws its presence at once (SPEC §11), shard by shard
    await mirror.until(near, 'offline', 5000);
    expect(mirror.latest.get(far)?.[1]).toBe('active');

    shards.servers[1].resume();
    await mirror.until(far, 'offline', 30_000);
  }, 90_000);
});
