import Redis from 'ioredis';
import { ClusterNames, EVERY_PARTITION } from '../../src/cluster/channels';
import { ChildGateway } from './harness/child-gateway';
import { TEST_REDIS_URL, randomPrefix } from './harness/cluster';
import { ProcessCluster, StatusMirror, untilRedisHas, untilRedisState } from './harness/cluster-nodes';
import { FakeUpstream } from './harness/fake-upstream';
import { api } from './harness/http';
import { userOf } from './harness/identity';
import { RedisServer } from './harness/redis-server';
import { waitFor } from './harness/wait';
import { WsClient } from './harness/ws-client';

/** The users Redis lists with connections on `node`: its set of every partition (SPEC §13.3), sorted. */
async function usersOn(r: Redis, names: ClusterNames, node: string): Promise<string[]> {
  const sets = await Promise.all(EVERY_PARTITION.map((partition) => r.smembers(names.nodeUsers(partition, node))));
  return sets.flat().sort();
}

const noticesOf = (upstream: FakeUpstream): string[] =>
  upstream.requests.filter((r) => r.path.endsWith('/gateway/session_inactive')).map(userOf);

/**
 * SPEC §11 "Redis outage" with processes: Redis (a private redis-server) is
 * killed and started again empty once, and every piece of state SPEC §11 says
 * a node re-asserts is checked after that one restart, in order: the node
 * registry, presence hashes and per-node user sets, deadlines, channel
 * subscriptions, lattice logs, and last node death (issue 17, item 1).
 */
describe('cluster: state re-asserted after Redis came back empty (SPEC §11)', () => {
  /** Every user's activity window: deadlines pass during the outage. */
  const WINDOW_MS = 3000;
  let redis: RedisServer;
  let upstream: FakeUpstream;
  let cluster: ProcessCluster;
  let names: ClusterNames;
  let probe: Redis;
  let a: ChildGateway;
  let b: ChildGateway;
  let tom: WsClient;
  let lena: WsClient;
  let walt: StatusMirror;
  const onA = ['tom', 'lena', 'walt'];
  const onB = ['frank', 'dora'];

  beforeAll(async () => {
    redis = await RedisServer.start();
    upstream = await FakeUpstream.start();
    const prefix = randomPrefix();
    names = new ClusterNames(prefix);
    cluster = new ProcessCluster(upstream, redis.url, prefix, { NEW_CONNECTION_IDLE_TIMEOUT: `${WINDOW_MS}ms` });
    a = await cluster.start('nodeA');
    b = await cluster.start('nodeB');
    probe = new Redis(redis.url, { maxRetriesPerRequest: 1, retryStrategy: () => 50 });
    probe.on('error', () => undefined);

    // A topic subscriber and a lattice subscriber on A, subscribed through B.
    const t = await cluster.hello(a, 'tom');
    tom = t.client;
    expect((await api(b.apiUrl, 'PUT', `/v1/connection/${t.cid}/subscriptions/room`)).status).toBe(204);
    const l = await cluster.hello(a, 'lena');
    lena = l.client;
    expect((await api(b.apiUrl, 'POST', '/v1/lattice/rooms', { shared: { r1: { msg_counter: 7 } } })).status).toBe(204);
    expect(
      (await api(b.apiUrl, 'PUT', `/v1/connection/${l.cid}/lattices/rooms`, { private: { lena: { r1: {} } } })).status,
    ).toBe(204);
    expect(await lena.next()).toEqual(['lattice', { namespace: 'rooms' }, { r1: { msg_counter: 7 } }]);
    // A watcher on A of users on B.
    const w = await cluster.hello(a, 'walt');
    expect((await api(a.apiUrl, 'PUT', `/v1/connection/${w.cid}/users`, onB)).status).toBe(204);
    walt = new StatusMirror(w.client);
    await cluster.hello(b, 'frank');
    await cluster.hello(b, 'dora');
    const lastConnectedAt = Date.now();
    await walt.until('frank', 'active', 5000);
    await walt.until('dora', 'active', 5000);

    await redis.kill();
    await untilRedisState(a.apiUrl, 'down');
    await untilRedisState(b.apiUrl, 'down');
    // The outage lasts past every user's deadline: Redis cannot claim them meanwhile.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, lastConnectedAt + WINDOW_MS + 500 - Date.now())));
    await redis.restart(); // empty: nothing on disk
    await untilRedisState(a.apiUrl, 'up');
    await untilRedisState(b.apiUrl, 'up');
  }, 90_000);

  afterAll(async () => {
    probe?.disconnect();
    await cluster?.close();
    await upstream?.close();
    await redis?.kill();
  });

  it('puts each node back in the registry, with its liveness key, before its presence is back', async () => {
    for (const [node, user] of [
      ['nodeA', 'walt'],
      ['nodeB', 'frank'],
    ]) {
      // The moment a node's presence is back in Redis, its death must be noticeable (issue 17: it was not).
      await untilRedisHas(
        probe,
        async (r) => (await r.hexists(names.user(user), `c:${node}`)) === 1,
        `the presence of ${user} on ${node}`,
      );
      expect([node, await probe.sismember(names.nodes, node), await probe.exists(names.alive(node))]).toEqual([
        node,
        1,
        1,
      ]);
    }
  });

  it('re-asserts the presence hashes and the per-node user sets of every connected user', async () => {
    await untilRedisHas(
      probe,
      async (r) =>
        (await usersOn(r, names, 'nodeA')).length === onA.length &&
        (await usersOn(r, names, 'nodeB')).length === onB.length,
      "both nodes' user sets",
    );
    expect(await usersOn(probe, names, 'nodeA')).toEqual([...onA].sort());
    expect(await usersOn(probe, names, 'nodeB')).toEqual([...onB].sort());
    for (const [node, users] of [
      ['nodeA', onA],
      ['nodeB', onB],
    ] as const) {
      for (const user of users) expect([user, await probe.hget(names.user(user), `c:${node}`)]).toEqual([user, '1']);
    }
  });

  it('claims the deadlines that passed while Redis was down: one session_inactive each, status inactive', async () => {
    await walt.until('frank', 'inactive', 5000);
    await walt.until('dora', 'inactive', 5000);
    await waitFor(
      () => new Set(noticesOf(upstream)).size >= onA.length + onB.length,
      () => `a session_inactive of every user; got ${JSON.stringify(noticesOf(upstream))}`,
      5000,
      20,
    );
    expect(noticesOf(upstream).sort()).toEqual([...onA, ...onB].sort());
  });

  it('re-appends the lattice state Redis lost: a subscriber on the other node sees it', async () => {
    const carol = await cluster.hello(b, 'carol');
    expect(
      (await api(a.apiUrl, 'PUT', `/v1/connection/${carol.cid}/lattices/rooms`, { private: { carol: { r1: {} } } }))
        .status,
    ).toBe(204);
    expect(await carol.client.next()).toEqual(['lattice', { namespace: 'rooms' }, { r1: { msg_counter: 7 } }]);
  });

  it('resubscribes topic, namespace and user channels: changes made on B reach A', async () => {
    expect((await api(b.apiUrl, 'POST', '/v1/publish/room', { after: 'restart' })).status).toBe(204);
    expect(await tom.next()).toEqual(['message', { topic: 'room' }, { after: 'restart' }]);
    expect((await api(b.apiUrl, 'POST', '/v1/lattice/rooms', { shared: { r1: { msg_counter: 8 } } })).status).toBe(204);
    expect(await lena.next()).toEqual(['lattice', { namespace: 'rooms' }, { r1: { msg_counter: 8 } }]);
    // A second connection of frank on B: B's script makes him active and publishes it on his channel.
    await cluster.hello(b, 'frank');
    await walt.until('frank', 'active', 5000);
  });

  it('notices the death of a node after the restart within 15 s: its users go offline', async () => {
    const killedAt = Date.now();
    b.kill('SIGKILL');
    await walt.until('frank', 'offline', 15_000);
    await walt.until('dora', 'offline', 15_000);
    expect(Date.now() - killedAt).toBeLessThan(15_000);
    // Over ten seconds of claims later: still exactly one notice for each expiry during the outage
    // (frank and carol have later ones of their own: frank's second connection made him active again).
    expect(
      noticesOf(upstream)
        .filter((user) => user !== 'frank' && user !== 'carol')
        .sort(),
    ).toEqual(['dora', 'lena', 'tom', 'walt']);
  }, 30_000);
});

/** SPEC §11 "Node death" and presence: a node paused longer than the liveness timeout is reaped; when it resumes it re-asserts its presence. */
describe('cluster: a node paused past the liveness timeout (SPEC §11)', () => {
  let upstream: FakeUpstream;
  let cluster: ProcessCluster;
  let probe: Redis;

  beforeAll(async () => {
    upstream = await FakeUpstream.start();
    probe = new Redis(TEST_REDIS_URL);
  });
  afterAll(async () => {
    probe.disconnect();
    await cluster?.close();
    await upstream.close();
  });

  it('is declared dead while stopped, and its users come back when it resumes', async () => {
    const prefix = randomPrefix();
    const names = new ClusterNames(prefix);
    cluster = new ProcessCluster(upstream, TEST_REDIS_URL, prefix);
    const a = await cluster.start('nodeA');
    const b = await cluster.start('nodeB');
    await cluster.hello(b, 'frank');
    const w = await cluster.hello(a, 'walt');
    expect((await api(a.apiUrl, 'PUT', `/v1/connection/${w.cid}/users`, ['frank'])).status).toBe(204);
    const walt = new StatusMirror(w.client);
    await walt.until('frank', 'active', 5000);

    b.kill('SIGSTOP');
    try {
      await walt.until('frank', 'offline', 16_000);
    } finally {
      b.kill('SIGCONT');
    }
    // B is alive and frank still connected there: B must put him back (SPEC §11 presence is cluster-wide).
    await walt.until('frank', 'active', 8000);
    expect(await probe.hget(names.user('frank'), 'c:nodeB')).toBe('1');
    expect(await usersOn(probe, names, 'nodeB')).toEqual(['frank']);
    expect(await probe.sismember(names.nodes, 'nodeB')).toBe(1);
  }, 60_000);
});
