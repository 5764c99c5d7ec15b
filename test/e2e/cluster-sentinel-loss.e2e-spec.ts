import { ChildGateway } from './harness/child-gateway';
import { randomPrefix } from './harness/cluster';
import { ProcessCluster, untilRedisState } from './harness/cluster-nodes';
import { FakeUpstream } from './harness/fake-upstream';
import { api } from './harness/http';
import { RedisSentinel } from './harness/redis-sentinel';
import { dropConnection, helloMeta, optIn, positionOf, resumeProtocols } from './harness/resume';
import { waitFor } from './harness/wait';
import { Frame, WsClient } from './harness/ws-client';

/** SPEC §13.2: after a promotion, the cluster works again within this. */
const RECOVERY_MS = 10_000;

/**
 * SPEC §13.1 with a real failover (issue 28, the forced-loss variant): the
 * replica is cut off its primary (harness/redis-sentinel.ts cuts its
 * replication link), writes are acknowledged that the replica never gets,
 * the primary is SIGKILLed and the sentinels promote the replica, which lacks
 * them: a rollback. Two `dist/main.js` nodes on the `redis+sentinel://` URL.
 * With REDIS_WAIT_REPLICAS=1 those writes are never acknowledged at all.
 */
describe('cluster on Sentinel: a failover to a replica that missed acknowledged writes (SPEC §13.1, §13.2)', () => {
  let sentinel: RedisSentinel;
  let upstream: FakeUpstream;
  let cluster: ProcessCluster;

  afterEach(async () => {
    await cluster?.close();
    await upstream?.close();
    await sentinel?.close();
  });

  async function start(env: Record<string, string> = {}): Promise<[ChildGateway, ChildGateway]> {
    sentinel = await RedisSentinel.start();
    upstream = await FakeUpstream.start();
    cluster = new ProcessCluster(upstream, sentinel.url, randomPrefix(), env);
    const nodes: [ChildGateway, ChildGateway] = [await cluster.start('nodeA'), await cluster.start('nodeB')];
    for (const node of nodes) await untilRedisState(node.apiUrl, 'up');
    return nodes;
  }

  async function frames(client: WsClient, count: number): Promise<Frame[]> {
    const out: Frame[] = [];
    for (let i = 0; i < count; i++) out.push(await client.next(RECOVERY_MS));
    return out;
  }

  /** Publish `n` through `node` until it is acknowledged (Redis may still be failing over), within 10 s. */
  async function publishAcknowledged(node: ChildGateway, n: number): Promise<void> {
    let last = '';
    await waitFor(
      async () => {
        const res = await api(node.apiUrl, 'POST', '/v1/publish/room', JSON.stringify({ n }));
        last = `${res.status} ${res.text}`;
        if (res.status === 204) return true;
        expect([res.status, JSON.parse(res.text).error]).toEqual([503, 'cluster_unavailable']);
        return false;
      },
      () => `publish ${n} through ${node.apiUrl} to be acknowledged after the promotion (last ${last})`,
      RECOVERY_MS,
      100, // pacing retries, as a backend does
    );
  }

  it('every publish acknowledged reaches the live subscribers once and in order; a resume across the failover reports the topic lost', async () => {
    const [a, b] = await start();
    const legacyA = await cluster.hello(a, 'lee');
    const legacyB = await cluster.hello(b, 'lou');
    const ann = await optIn(a, 'ann', cluster);
    for (const [cid, via] of [
      [legacyA.cid, b],
      [legacyB.cid, a],
      [ann.cid, b],
    ] as const) {
      expect((await api(via.apiUrl, 'PUT', `/v1/connection/${cid}/subscriptions/room`)).status).toBe(204);
    }
    for (let n = 1; n <= 3; n++) await publishAcknowledged(n % 2 ? a : b, n);
    await sentinel.untilReplicaCaughtUp();
    await sentinel.cutReplica();
    // Acknowledged, delivered, and never on the replica that is about to be promoted.
    for (let n = 4; n <= 5; n++) await publishAcknowledged(n % 2 ? a : b, n);
    const seenByAnn = (await frames(ann.client, 5)).map((frame) => positionOf(frame, 'room'));
    await dropConnection(ann.client);
    const former = await sentinel.killPrimary();
    await sentinel.awaitPromotion(former);
    for (let n = 6; n <= 8; n++) await publishAcknowledged(n % 2 ? a : b, n);

    for (const legacy of [legacyA, legacyB]) {
      expect(await frames(legacy.client, 8)).toEqual(
        [1, 2, 3, 4, 5, 6, 7, 8].map((n) => ['message', { topic: 'room' }, { n }]),
      );
    }
    const back = await WsClient.hello(a.wsUrl, {
      query: 'user=ann-back',
      protocols: resumeProtocols(ann.resume.token, { room: seenByAnn[4] }),
    });
    cluster.clients.push(back.client);
    expect(helloMeta(back.hello)).toMatchObject({ resumed: true, lost: ['room'] });
    await publishAcknowledged(b, 9);
    const [offset, epoch] = positionOf(await back.client.next(), 'room');
    expect([offset > 0, epoch === seenByAnn[0][1]]).toEqual([true, false]);
  }, 120_000);

  it('with REDIS_WAIT_REPLICAS=1, writes made while the replica is cut off answer 503 cluster_unavailable, none 204', async () => {
    const [a, b] = await start({ REDIS_WAIT_REPLICAS: '1', REDIS_WAIT_TIMEOUT: '200ms' });
    expect((await api(a.apiUrl, 'POST', '/v1/publish/room', JSON.stringify({ n: 1 }))).status).toBe(204);
    expect((await api(b.apiUrl, 'POST', '/v1/lattice/rooms', { shared: { r1: { seen_counter: 1 } } })).status).toBe(
      204,
    );
    await sentinel.cutReplica();
    for (let n = 2; n <= 5; n++) {
      const node = n % 2 ? a : b;
      for (const res of [
        await api(node.apiUrl, 'POST', '/v1/publish/room', JSON.stringify({ n })),
        await api(node.apiUrl, 'POST', '/v1/lattice/rooms', { shared: { r1: { seen_counter: n } } }),
      ]) {
        expect([n, res.status, (JSON.parse(res.text) as { error: string }).error]).toEqual([
          n,
          503,
          'cluster_unavailable',
        ]);
      }
    }
    // The replica back in sync: acknowledged again.
    await sentinel.restoreReplica();
    expect((await api(a.apiUrl, 'POST', '/v1/publish/room', JSON.stringify({ n: 6 }))).status).toBe(204);
  }, 120_000);
});
