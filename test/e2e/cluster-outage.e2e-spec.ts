import { TestCluster, randomPrefix, startTestCluster } from './harness/cluster';
import { startTestGateway } from './harness/gateway';
import { api } from './harness/http';
import { RedisServer } from './harness/redis-server';
import { waitFor } from './harness/wait';
import { Frame, WsClient } from './harness/ws-client';

/** SPEC §11 "Redis outage": a dedicated redis-server is killed, then restarted empty, mid-test. */
describe('cluster: Redis outage and recovery (SPEC §11)', () => {
  let redis: RedisServer;
  let cluster: TestCluster;
  /** Every readiness answer seen while polling, to prove it stayed 200. */
  const readiness: number[] = [];

  beforeEach(async () => {
    redis = await RedisServer.start();
    // SPEC §11's outage rows are for publishes without topic history: with it (RESUME_WINDOW > 0,
    // the default) a publish answers 503 while Redis is down (§12.4, cluster-history.e2e-spec.ts).
    cluster = await startTestCluster(2, { REDIS_URL: redis.url, RESUME_WINDOW: '0s' });
  });
  afterEach(async () => {
    await cluster.close();
    await redis.kill();
  });

  /** Poll /health/ready of a node until its body reports `redis` as `state` (every answer recorded). */
  async function untilRedis(apiUrl: string, state: 'up' | 'down', ms = 10_000): Promise<void> {
    let body: { info?: { cluster?: { redis?: string } } } = {};
    await waitFor(
      async () => {
        const res = await fetch(apiUrl + '/health/ready');
        readiness.push(res.status);
        body = (await res.json()) as typeof body;
        return body.info?.cluster?.redis === state;
      },
      () => `readiness to report redis ${state}: ${JSON.stringify(body)}`,
      ms,
      20,
    );
  }

  async function status(apiUrl: string, method: string, path: string, body?: unknown): Promise<number> {
    return (await api(apiUrl, method, path, body)).status;
  }

  const statusesOf = (frame: Frame) => frame[2] as Record<string, { status_register: [number, string] }>;

  it('keeps local work going, answers 503 cluster_unavailable across nodes, then heals without restart', async () => {
    const [a, b] = cluster.nodes;
    const alice = await a.helloAs('alice');
    await b.helloAs('bob');
    expect(await status(b.apiUrl, 'PUT', `/v1/connection/${alice.cid}/subscriptions/room`)).toBe(204);
    expect(
      await status(b.apiUrl, 'PUT', `/v1/connection/${alice.cid}/lattices/rooms`, {
        shared: { r1: { msg_counter: 7 } },
        private: { alice: { r1: {} } },
      }),
    ).toBe(204);
    expect(await alice.client.next()).toEqual(['lattice', { namespace: 'rooms' }, { r1: { msg_counter: 7 } }]);

    await redis.kill();
    await untilRedis(a.apiUrl, 'down');
    await untilRedis(b.apiUrl, 'down');
    expect(await (await fetch(a.apiUrl + '/metrics')).text()).toMatch(/^gateway_redis_up{shard="control"} 0$/m);
    // Local delivery, calls and authorization keep working.
    expect(await status(a.apiUrl, 'POST', '/v1/publish/room', { during: 'outage' })).toBe(204);
    expect(await alice.client.next()).toEqual(['message', { topic: 'room' }, { during: 'outage' }]);
    expect(await alice.client.call('chat.echo', { request_id: 1 })).toEqual([
      'result',
      { request_id: 1 },
      expect.anything(),
    ]);
    const late = await a.helloAs('late');
    // A call that needs another node cannot be served.
    const crossNode = await api(b.apiUrl, 'PUT', `/v1/connection/${alice.cid}/subscriptions/other`);
    expect([crossNode.status, crossNode.json()]).toEqual([
      503,
      { error: 'cluster_unavailable', message: expect.any(String) },
    ]);
    // Lattice state is shared through Redis: an update cannot be taken in, not even on the owner of its subscribers.
    const update = await api(a.apiUrl, 'POST', '/v1/lattice/rooms', { shared: { r1: { msg_counter: 8 } } });
    expect([update.status, update.json()]).toEqual([
      503,
      { error: 'cluster_unavailable', message: expect.any(String) },
    ]);

    await redis.restart(); // empty: nothing on disk
    await untilRedis(a.apiUrl, 'up');
    await untilRedis(b.apiUrl, 'up');
    expect(readiness.every((code) => code === 200)).toBe(true);

    // Delivery resumes across nodes: A resubscribed its topic channel.
    expect(await status(b.apiUrl, 'POST', '/v1/publish/room', { after: 'outage' })).toBe(204);
    expect(await alice.client.next()).toEqual(['message', { topic: 'room' }, { after: 'outage' }]);
    // Lattice healed: A merged its copy back into the empty Redis; a subscriber on B sees it.
    const carol = await b.helloAs('carol');
    expect(
      await status(a.apiUrl, 'PUT', `/v1/connection/${carol.cid}/lattices/rooms`, { private: { carol: { r1: {} } } }),
    ).toBe(204);
    expect(await carol.client.next()).toEqual(['lattice', { namespace: 'rooms' }, { r1: { msg_counter: 7 } }]);
    // Presence healed: users connected through the outage are active again in Redis.
    expect(await status(b.apiUrl, 'PUT', `/v1/connection/${carol.cid}/users`, ['bob', 'late', 'alice'])).toBe(204);
    const statuses = statusesOf(await carol.client.next());
    expect(
      Object.fromEntries(Object.entries(statuses).map(([user, value]) => [user, value.status_register[1]])),
    ).toEqual({ bob: 'active', late: 'active', alice: 'active' });
    await late.client.close();
  }, 60_000);
});

describe('cluster: secrets of REDIS_URL (SPEC §11)', () => {
  it('never logs the Redis password, even when Redis refuses it', async () => {
    const t = await startTestGateway({
      REDIS_URL: 'redis://gw:s3cret-pw-42@127.0.0.1:6379',
      REDIS_PREFIX: randomPrefix(),
      LOG_LEVEL: 'debug',
    });
    try {
      const ready = await (await fetch(t.apiUrl + '/health/ready')).json();
      expect(ready).toMatchObject({ status: 'ok', info: { cluster: { redis: 'down' } } });
      expect(t.logs.some((line) => line.includes('redis'))).toBe(true);
      expect(t.logs.filter((line) => line.includes('s3cret-pw-42'))).toEqual([]);
    } finally {
      await t.close();
    }
  }, 20_000);
});
