import { ChildGateway } from './harness/child-gateway';
import { randomPrefix } from './harness/cluster';
import { ProcessCluster, StatusMirror, untilRedisState } from './harness/cluster-nodes';
import { FakeUpstream } from './harness/fake-upstream';
import { api } from './harness/http';
import { scrapeMetrics, untilMetric } from './harness/metrics';
import { deliveryFaults, loadReceived, Published, PUBLISH_GAP_MS, publishUntilStopped } from './harness/publish-load';
import { freePort } from './harness/ports';
import { RedisSentinel } from './harness/redis-sentinel';
import { waitFor } from './harness/wait';
import { WsClient } from './harness/ws-client';

/** SPEC §13.2: after a promotion, the cluster works again within this. */
const RECOVERY_MS = 10_000;

/** What is left of `deadline` (epoch ms) for a bounded wait; a wait with nothing left fails at once, naming its goal. */
function leftUntil(deadline: number): number {
  return Math.max(1, deadline - Date.now());
}

/**
 * SPEC §13.2 with real processes: a primary, a replica and three sentinels
 * (harness/redis-sentinel.ts), two `dist/main.js` nodes on the
 * `redis+sentinel://` URL. The forced-loss variant (the replica cut off with
 * `RedisSentinel.cutReplica()` before the kill, with and without
 * REDIS_WAIT_REPLICAS) is §13.1's and lives with the rollback specs.
 */
describe('cluster on a Sentinel-managed Redis: the primary is SIGKILLed (SPEC §13.2)', () => {
  let sentinel: RedisSentinel;
  let upstream: FakeUpstream;
  let cluster: ProcessCluster;
  let a: ChildGateway;
  let b: ChildGateway;
  let load: { stop(): Promise<Published[]> } | null = null;

  beforeAll(async () => {
    sentinel = await RedisSentinel.start();
    upstream = await FakeUpstream.start();
    cluster = new ProcessCluster(upstream, sentinel.url, randomPrefix());
    a = await cluster.start('nodeA');
    b = await cluster.start('nodeB');
  }, 90_000);

  afterAll(async () => {
    await load?.stop();
    await cluster?.close();
    await upstream?.close();
    await sentinel?.close();
  });

  it('delivers across nodes, converges presence and answers /v1 within 10 s of the promotion, losing nothing acknowledged before the kill', async () => {
    await untilRedisState(a.apiUrl, 'up');
    await untilRedisState(b.apiUrl, 'up');
    // Topic and lattice subscribers on both nodes, each subscribed through the other node.
    const alice = await cluster.hello(a, 'alice');
    const bob = await cluster.hello(b, 'bob');
    for (const [subscriber, api_] of [
      [alice, b],
      [bob, a],
    ] as const) {
      expect((await api(api_.apiUrl, 'PUT', `/v1/connection/${subscriber.cid}/subscriptions/room`)).status).toBe(204);
    }
    const lena = await cluster.hello(a, 'lena');
    expect(
      (await api(b.apiUrl, 'PUT', `/v1/connection/${lena.cid}/lattices/rooms`, { private: { lena: { r1: {} } } }))
        .status,
    ).toBe(204);
    expect(await lena.client.next()).toEqual(['lattice', { namespace: 'rooms' }, { r1: {} }]);
    // Watchers on each node of users on the other.
    const w = await cluster.hello(a, 'walt');
    expect((await api(b.apiUrl, 'PUT', `/v1/connection/${w.cid}/users`, ['frank', 'gina'])).status).toBe(204);
    const walt = new StatusMirror(w.client);
    const wa = await cluster.hello(b, 'wanda');
    expect((await api(a.apiUrl, 'PUT', `/v1/connection/${wa.cid}/users`, ['tom', 'gina'])).status).toBe(204);
    const wanda = new StatusMirror(wa.client);
    await cluster.hello(b, 'frank');
    await cluster.hello(a, 'tom');
    await walt.until('frank', 'active', 5000);
    await wanda.until('tom', 'active', 5000);

    // Before the kill: publishes and lattice updates through both nodes, all acknowledged, and on the replica.
    const before: Published[] = [];
    for (let seq = 1; seq <= 10; seq++) {
      const [via, node] = seq % 2 === 1 ? ['a', a] : ['b', b];
      before.push({
        via: `before-${via}`,
        seq,
        status: (await api(node.apiUrl, 'POST', '/v1/publish/room', { via: `before-${via}`, seq })).status,
      });
      expect(
        (await api(node.apiUrl, 'POST', '/v1/lattice/rooms', { shared: { r1: { members_set: [`m${seq}`] } } })).status,
      ).toBe(204);
    }
    expect(before.map((p) => p.status)).toEqual(Array(10).fill(204));
    for (const subscriber of [alice, bob]) {
      await waitFor(
        () => (loadReceived(subscriber.client, 'room').length >= 10 ? true : undefined),
        'the 10 publishes before the kill',
        5000,
      );
    }
    // The race of a write with the kill (a replica that lags) is §13.1's forced-loss case, not this one.
    await sentinel.untilReplicaCaughtUp();

    // The kill, under publishing through both nodes.
    load = publishUntilStopped(
      [
        ['a', a],
        ['b', b],
      ],
      'room',
    );
    const former = await sentinel.killPrimary();
    const { promotedAt } = await sentinel.awaitPromotion(former);
    const deadline = promotedAt + RECOVERY_MS;

    await untilRedisState(a.apiUrl, 'up', leftUntil(deadline));
    await untilRedisState(b.apiUrl, 'up', leftUntil(deadline));
    // /v1 commands across nodes and cross-node delivery.
    for (const [subscriber, api_] of [
      [alice, b],
      [bob, a],
    ] as const) {
      expect((await api(api_.apiUrl, 'PUT', `/v1/connection/${subscriber.cid}/subscriptions/after`)).status).toBe(204);
      expect((await api(api_.apiUrl, 'POST', '/v1/publish/after', { n: 1 })).status).toBe(204);
      await waitFor(
        () => (subscriber.client.frames.some((f) => f[0] === 'message' && f[1].topic === 'after') ? true : undefined),
        'a publish through the other node after the failover',
        leftUntil(deadline),
      );
    }
    // Presence converges: a user who arrives on B is active to the watchers of both nodes, the others stay active.
    await cluster.hello(b, 'gina');
    await walt.until('gina', 'active', leftUntil(deadline));
    await wanda.until('gina', 'active', leftUntil(deadline));
    expect([walt.latest.get('frank')?.[1], wanda.latest.get('tom')?.[1]]).toEqual(['active', 'active']);
    for (const node of [a, b]) {
      const metrics = await scrapeMetrics(node.apiUrl);
      expect([
        node.apiUrl,
        metrics.value('gateway_redis_up{shard="control"}'),
        metrics.value('gateway_redis_failovers_total') >= 1,
      ]).toEqual([node.apiUrl, 1, true]);
    }
    expect(Date.now() - promotedAt).toBeLessThanOrEqual(RECOVERY_MS);

    // Nothing acknowledged is lost: every 204 reached both subscribers once and in order per node.
    const published = [...before, ...(await load.stop())];
    load = null;
    expect(published.some((p) => p.status === 204 && !p.via.startsWith('before'))).toBe(true);
    const faults: Record<string, string[]> = {};
    for (const [name, subscriber] of [
      ['alice', alice],
      ['bob', bob],
    ] as const) {
      // A publish acknowledged just now may still be on its way: a bounded wait, then the faults name what is missing.
      const faultsNow = (): string[] => deliveryFaults(loadReceived(subscriber.client, 'room'), published);
      await waitFor(
        () => (faultsNow().length === 0 ? true : undefined),
        `every acknowledged publish at ${name}`,
        5000,
      ).catch(() => undefined);
      faults[name] = faultsNow();
    }
    expect(faults).toEqual({ alice: [], bob: [] });
    // Lattice updates acknowledged before the kill all survive: a new subscriber on either node sees every one.
    const carol = await cluster.hello(b, 'carol');
    expect(
      (await api(a.apiUrl, 'PUT', `/v1/connection/${carol.cid}/lattices/rooms`, { private: { carol: { r1: {} } } }))
        .status,
    ).toBe(204);
    const snapshot = (await carol.client.next(5000))[2] as { r1: { members_set: string[] } };
    expect([...snapshot.r1.members_set].sort()).toEqual(Array.from({ length: 10 }, (_, i) => `m${i + 1}`).sort());
  }, 180_000);

  it('leaves a primary gone silent (a partition) for the promoted replica within 10 s, and keeps no link on it once demoted', async () => {
    await sentinel.restartKilled(); // the first primary, empty, is now the replica of the second
    const carl = await cluster.hello(a, 'carl');
    expect((await api(b.apiUrl, 'PUT', `/v1/connection/${carl.cid}/subscriptions/silent`)).status).toBe(204);
    const failoversBefore = await Promise.all(
      [a, b].map(async (node) => (await scrapeMetrics(node.apiUrl)).value('gateway_redis_failovers_total')),
    );
    // SIGSTOP: every connection to it stays open and nothing is answered (centrifugo#1189's setting).
    const former = sentinel.pausePrimary();
    try {
      const { promotedAt } = await sentinel.awaitPromotion(former);
      const deadline = promotedAt + RECOVERY_MS;
      await untilDelivered(b, carl.client, 'silent', deadline);
      await untilDelivered(a, carl.client, 'silent', deadline);
      for (const [i, node] of [a, b].entries()) {
        await untilMetric(
          node.apiUrl,
          'gateway_redis_failovers_total',
          (value) => value > failoversBefore[i],
          leftUntil(deadline),
        );
        expect((await scrapeMetrics(node.apiUrl)).value('gateway_redis_up{shard="control"}')).toBe(1);
      }
    } finally {
      sentinel.resumePaused();
    }
    // Back, the old primary is demoted by the sentinels; no node has a connection on it.
    await waitFor(
      async () => (await sentinel.roleOn(former)) === 'slave',
      `the node on ${former} to be demoted to a replica`,
      20_000,
      20,
    );
    const names = await sentinel.clientNamesOn(former);
    expect(names?.filter((name) => name.startsWith('gateway:'))).toEqual([]);
  }, 120_000);

  it('runs with Redis down on a master name the sentinels do not know: gateway_redis_up 0, a clear log line, retrying, no crash', async () => {
    const node = await ChildGateway.start(
      {
        UPSTREAM_URL: upstream.url,
        REDIS_URL: sentinel.urlFor('nosuchmaster'),
        REDIS_PREFIX: randomPrefix(),
        LOG_LEVEL: 'debug',
      },
      20_000,
    );
    try {
      await untilRetriedTwice(node);
      const warning = node.logs.find((line) => line.level === 'warn' && JSON.stringify(line).includes('nosuchmaster'));
      expect(warning).toMatchObject({ msg: expect.stringMatching(/sentinel/i) });
      await expectRunningWithRedisDown(node);
    } finally {
      await node.stop();
    }
  }, 60_000);
});

describe('cluster on Sentinel URLs that cannot work (SPEC §13.2)', () => {
  let upstream: FakeUpstream;

  beforeAll(async () => {
    upstream = await FakeUpstream.start();
  });
  afterAll(async () => {
    await upstream?.close();
  });

  it('refuses a malformed Sentinel URL at start-up with a configuration error naming the part, and no secret', async () => {
    const url =
      'redis+sentinel://gw:hunter2-secret@127.0.0.1:26379,127.0.0.1:0/mymaster?sentinel_password=s3ntinel-secret';
    const error = await ChildGateway.start({ UPSTREAM_URL: upstream.url, REDIS_URL: url }).then(
      (node) => node.stop().then(() => new Error('the node started')),
      (err: Error) => err,
    );
    expect(error.message).toContain('gateway exited (1) before starting');
    expect(error.message).toContain(
      'REDIS_URL: redis+sentinel:// URL: sentinel address "127.0.0.1:0" is not host:port',
    );
    expect(error.message).not.toMatch(/hunter2|s3ntinel|secret/);
  }, 30_000);

  it('runs with Redis down when no sentinel answers, retrying, and never logs a password', async () => {
    const ports = [await freePort(), await freePort()];
    const url = `redis+sentinel://gw:hunter2-secret@127.0.0.1:${ports[0]},127.0.0.1:${ports[1]}/mymaster?sentinel_password=s3ntinel-secret`;
    const node = await ChildGateway.start(
      { UPSTREAM_URL: upstream.url, REDIS_URL: url, REDIS_PREFIX: randomPrefix(), LOG_LEVEL: 'debug' },
      20_000,
    );
    try {
      await untilRetriedTwice(node);
      expect(node.logs.some((line) => line.level === 'warn' && /sentinel/i.test(String(line.msg)))).toBe(true);
      await expectRunningWithRedisDown(node);
      expect(JSON.stringify(node.logs) + node.stderr).not.toMatch(/hunter2|s3ntinel-secret/);
    } finally {
      await node.stop();
    }
  }, 60_000);
});

/**
 * Publish `{n}` to `topic` through `node` until one answers 204 (each try
 * bounded: a node still on a silent primary gets no answer), then await it at
 * `subscriber`; all before `deadline` (epoch ms).
 */
async function untilDelivered(
  node: ChildGateway,
  subscriber: WsClient,
  topic: string,
  deadline: number,
): Promise<void> {
  const n = Math.random();
  let last = 'no answer';
  await waitFor(
    async () => {
      const status = await fetch(`${node.apiUrl}/v1/publish/${topic}`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ n }),
        signal: AbortSignal.timeout(Math.min(1000, leftUntil(deadline))),
      }).then(
        (r) => r.status,
        (err: Error) => err.name,
      );
      last = String(status);
      return status === 204;
    },
    () => `a publish through ${node.apiUrl} acknowledged before the deadline (last: ${last})`,
    leftUntil(deadline),
    PUBLISH_GAP_MS,
  );
  await waitFor(
    () => subscriber.frames.some((f) => f[0] === 'message' && f[1].topic === topic && (f[2] as { n?: number }).n === n),
    `the publish through ${node.apiUrl} at the subscriber`,
    leftUntil(deadline),
  );
}

/** Two rounds over every sentinel have failed (ioredis reports each round): the node retries, it does not hang. */
async function untilRetriedTwice(node: ChildGateway): Promise<void> {
  const rounds = (): number =>
    node.logs.filter(
      (line) => line.msg === 'redis error' && String(line.error).includes('All sentinels are unreachable'),
    ).length;
  await waitFor(
    () => (rounds() >= 2 ? true : undefined),
    'two failed rounds over the sentinels in the debug log',
    15_000,
  );
}

async function expectRunningWithRedisDown(node: ChildGateway): Promise<void> {
  const ready = await fetch(node.apiUrl + '/health/ready');
  expect([ready.status, await ready.json()]).toEqual([
    200,
    expect.objectContaining({ info: expect.objectContaining({ cluster: expect.objectContaining({ redis: 'down' }) }) }),
  ]);
  expect((await scrapeMetrics(node.apiUrl)).value('gateway_redis_up{shard="control"}')).toBe(0);
  expect((await fetch(node.publicUrl + '/health/live')).status).toBe(200);
}
