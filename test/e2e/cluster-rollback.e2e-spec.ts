import { TestCluster, startTestCluster } from './harness/cluster';
import { untilRedisState } from './harness/cluster-nodes';
import { TestGateway } from './harness/gateway';
import { api } from './harness/http';
import { scrapeMetrics } from './harness/metrics';
import { RedisServer } from './harness/redis-server';
import {
  Position,
  dropConnection,
  expectEightAcrossRollback,
  helloMeta,
  optIn,
  positionOf,
  resumeProtocols,
} from './harness/resume';
import { Frame, WsClient } from './harness/ws-client';
import { expectPut } from './harness/v1';
import { expectNothingMore } from './harness/barrier';

/**
 * SPEC §13.1: Redis comes back with less than it acknowledged (a restart from
 * an RDB snapshot; AOF everysec and a failover to a lagging replica lose the
 * same way). Issue 28's operator scenario, made deterministic: the snapshot
 * is taken at a known point (`SAVE`), then Redis is SIGKILLed and started
 * again from it. Two nodes on a private redis-server; subscribers legacy and
 * resumable on each node.
 */
describe('cluster: Redis that rolls back (SPEC §13.1)', () => {
  let redis: RedisServer;
  let cluster: TestCluster;
  let a: TestGateway;
  let b: TestGateway;

  beforeEach(async () => {
    redis = await RedisServer.start();
    cluster = await startTestCluster(2, { REDIS_URL: redis.url });
    [a, b] = cluster.nodes;
  });

  afterEach(async () => {
    await cluster?.close();
    await redis?.kill();
  });

  async function publish(node: TestGateway, n: number): Promise<void> {
    const res = await api(node.apiUrl, 'POST', '/v1/publish/room', JSON.stringify({ n }));
    expect([n, res.status, res.text]).toEqual([n, 204, '']);
  }

  async function update(node: TestGateway, n: number): Promise<void> {
    const res = await api(node.apiUrl, 'POST', '/v1/lattice/rooms', {
      shared: { r1: { members_set: [`u${n}`], seen_counter: n } },
    });
    expect([n, res.status, res.text]).toEqual([n, 204, '']);
  }

  /** Crash Redis and start it again from the last snapshot; resolves once both nodes are back on it. */
  async function rollBack(): Promise<void> {
    await redis.kill();
    await untilRedisState(a.apiUrl, 'down');
    await untilRedisState(b.apiUrl, 'down');
    await redis.restart();
    await untilRedisState(a.apiUrl, 'up');
    await untilRedisState(b.apiUrl, 'up');
  }

  async function frames(client: WsClient, count: number): Promise<Frame[]> {
    const out: Frame[] = [];
    for (let i = 0; i < count; i++) out.push(await client.next());
    return out;
  }

  it('publishes 1-3, snapshot, 4-5, crash, restart from the snapshot, 6-8: every subscriber gets 1..8 once and in order', async () => {
    const legacyA = await a.helloAs('lee');
    const legacyB = await b.helloAs('lou');
    const resumableA = await optIn(a, 'ann');
    const resumableB = await optIn(b, 'bob');
    for (const cid of [legacyA.cid, resumableB.cid])
      await expectPut(a.apiUrl, `/v1/connection/${cid}/subscriptions/room`);
    for (const cid of [legacyB.cid, resumableA.cid])
      await expectPut(b.apiUrl, `/v1/connection/${cid}/subscriptions/room`);
    const through = (n: number): TestGateway => (n % 2 === 0 ? b : a);

    for (let n = 1; n <= 3; n++) await publish(through(n), n);
    await redis.snapshot();
    for (let n = 4; n <= 5; n++) await publish(through(n), n);
    await rollBack();
    for (let n = 6; n <= 8; n++) await publish(through(n), n);

    await expectEightAcrossRollback('room', [legacyA.client, legacyB.client], [resumableA.client, resumableB.client]);
    const rollbacks = await Promise.all(
      [a, b].map(async (node) => (await scrapeMetrics(node.apiUrl)).value('gateway_redis_rollbacks_total')),
    );
    expect(rollbacks).toEqual([1, 1]);
  });

  it('a resume from a position the rolled-back history does not hold reports the topic lost, never "nothing missed"', async () => {
    const ann = await optIn(a, 'ann');
    const bob = await optIn(b, 'bob');
    await expectPut(b.apiUrl, `/v1/connection/${ann.cid}/subscriptions/room`);
    await expectPut(a.apiUrl, `/v1/connection/${bob.cid}/subscriptions/room`);
    for (let n = 1; n <= 3; n++) await publish(b, n);
    await redis.snapshot();
    for (let n = 4; n <= 5; n++) await publish(b, n);
    const seenByAnn = (await frames(ann.client, 5)).map((frame) => positionOf(frame, 'room'));
    const seenByBob = (await frames(bob.client, 5)).map((frame) => positionOf(frame, 'room'));
    await dropConnection(ann.client);
    await dropConnection(bob.client);
    await rollBack();

    // Ahead of what Redis holds now, in the same epoch (ann saw 5, Redis says 3): lost, nothing replayed.
    const annBack = await a.hello({
      query: 'user=ann-resume',
      protocols: resumeProtocols(ann.resume.token, { room: seenByAnn[4] }),
    });
    expect(helloMeta(annBack.hello)).toMatchObject({ resumed: true, lost: ['room'] });
    // Behind it (bob offers 3): what came after 3 is not in the history either: lost.
    const bobBack = await b.hello({
      query: 'user=bob-resume',
      protocols: resumeProtocols(bob.resume.token, { room: seenByBob[2] }),
    });
    expect(helloMeta(bobBack.hello)).toMatchObject({ resumed: true, lost: ['room'] });
    // Live traffic goes on, in the new epoch, for both.
    await publish(a, 6);
    for (const client of [annBack.client, bobBack.client]) {
      const [offset, epoch]: Position = positionOf(await client.next(), 'room');
      expect([offset, epoch === seenByAnn[0][1]]).toEqual([1, false]);
      await expectNothingMore(client);
      await client.close();
    }
  });

  it('lattice updates acknowledged on either side of the snapshot all survive: a new subscriber sees every one', async () => {
    // A holds the namespace (a subscriber there); updates go through both nodes.
    const holder = await a.helloAs('hal');
    await expectPut(b.apiUrl, `/v1/connection/${holder.cid}/lattices/rooms`, { private: { hal: { r1: {} } } });
    expect(await holder.client.next()).toEqual(['lattice', { namespace: 'rooms' }, { r1: {} }]);
    const through = (n: number): TestGateway => (n % 2 === 0 ? b : a);
    for (let n = 1; n <= 4; n++) await update(through(n), n);
    await redis.snapshot();
    for (let n = 5; n <= 6; n++) await update(through(n), n);
    await frames(holder.client, 6);
    await rollBack();
    for (let n = 7; n <= 8; n++) await update(through(n), n);

    const all = { r1: { members_set: [1, 2, 3, 4, 5, 6, 7, 8].map((n) => `u${n}`), seen_counter: 8 } };
    for (const node of [b, a]) {
      const deadline = Date.now() + 5000;
      for (;;) {
        // A fresh subscriber's snapshot: what the cluster holds for the namespace now.
        const user = `reader${Math.random().toString(36).slice(2, 8)}`;
        const reader = await node.helloAs(user);
        await expectPut(node.apiUrl, `/v1/connection/${reader.cid}/lattices/rooms`, {
          private: { [user]: { r1: {} } },
        });
        const [, , data] = await reader.client.next();
        await reader.client.close();
        const r1 = (data as { r1?: { members_set?: string[]; seen_counter?: number } }).r1 ?? {};
        const seen = { r1: { members_set: [...(r1.members_set ?? [])].sort(), seen_counter: r1.seen_counter } };
        if (JSON.stringify(seen) === JSON.stringify(all)) break;
        if (Date.now() > deadline)
          throw new Error(
            `a subscriber on ${node.apiUrl} still sees ${JSON.stringify(seen)} 5 s after the rollback; expected ${JSON.stringify(all)}`,
          );
      }
    }
  });
});
