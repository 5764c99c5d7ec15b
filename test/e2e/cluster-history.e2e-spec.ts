import Redis from 'ioredis';
import { ClusterNames } from '../../src/cluster/channels';
import { TestCluster, startTestCluster } from './harness/cluster';
import { itOnOneRedis, topologyRedis } from './harness/topology-redis';
import { TestGateway } from './harness/gateway';
import { untilRedisHas } from './harness/cluster-nodes';
import { api } from './harness/http';
import { scrapeMetrics, untilMetric } from './harness/metrics';
import { RedisServer } from './harness/redis-server';
import {
  Position,
  ResumeMeta,
  dropConnection,
  helloMeta,
  optIn,
  optInProtocols,
  positionOf,
  resumeOf,
  resumeProtocols,
} from './harness/resume';
import { Frame, WsClient } from './harness/ws-client';
import { expectPut, expectPublish } from './harness/v1';
import { expectNothingMore } from './harness/barrier';

/**
 * SPEC §12.3/§12.4 in cluster mode: topic history and positions in Redis
 * (one stream per topic, offsets cluster-wide), gap filling, the resume
 * replay read from Redis while live traffic goes on, 503 without Redis.
 * Resumes here are on the node that held the session (resume across nodes is
 * cluster-resume.e2e-spec.ts).
 */
describe('cluster: topic history and positions (SPEC §12.4)', () => {
  let cluster: TestCluster;
  let redis: Redis;
  let ownRedis: RedisServer | null = null;

  afterEach(async () => {
    await cluster?.close();
    redis?.disconnect();
    await ownRedis?.kill();
    ownRedis = null;
  });

  /** Two nodes on the run's topology, or on the one Redis at `redisUrl`. */
  async function start(env: Record<string, string> = {}, redisUrl?: string): Promise<[TestGateway, TestGateway]> {
    cluster = await startTestCluster(2, redisUrl === undefined ? env : { REDIS_URL: redisUrl, ...env });
    redis =
      redisUrl === undefined
        ? topologyRedis({ maxRetriesPerRequest: 1 })
        : new Redis(redisUrl, { maxRetriesPerRequest: 1 });
    return [cluster.nodes[0], cluster.nodes[1]];
  }

  async function resume(
    node: TestGateway,
    user: string,
    token: string,
    positions: Record<string, Position> = {},
  ): Promise<{ client: WsClient; hello: Frame }> {
    return node.hello({ query: `user=${user}-resume`, protocols: resumeProtocols(token, positions) });
  }

  /** A resumable session of ann on `a`, subscribed to t1 through `b`, that saw one message and is now detached. */
  async function seenThenDetached(
    a: TestGateway,
    b: TestGateway,
  ): Promise<{ first: ResumeMeta; cid: string; seen: Position }> {
    const { client, resume: first, cid } = await optIn(a, 'ann');
    await expectPut(b.apiUrl, `/v1/connection/${cid}/subscriptions/t1`);
    await expectPublish(b.apiUrl, 't1', 'seen');
    const seen = positionOf(await client.next(), 't1');
    await dropConnection(client);
    await untilDetached(a, 1);
    return { first, cid, seen };
  }

  async function untilDetached(node: TestGateway, count: number): Promise<void> {
    await untilMetric(node.apiUrl, 'gateway_sessions_detached', (v) => v === count);
  }

  /** Every key of this cluster's prefix matching `pattern` (after the prefix). */
  async function keys(pattern: string): Promise<string[]> {
    return redis.keys(cluster.prefix + pattern);
  }

  describe('positions (12.4)', () => {
    it('message frames carry cluster-wide offsets for publishes through both nodes, the same on every node', async () => {
      const [a, b] = await start();
      const onA = await optIn(a, 'ann');
      const onB = await optIn(b, 'bob');
      await expectPut(b.apiUrl, `/v1/connection/${onA.cid}/subscriptions/a/b`);
      await expectPut(a.apiUrl, `/v1/connection/${onB.cid}/subscriptions/a/b`);
      const through = [a, b, b, a, b];
      for (const [i, node] of through.entries()) await expectPublish(node.apiUrl, 'a/b', { n: i + 1 });
      const seenA = await Promise.all(through.map(() => onA.client.next()));
      const seenB = await Promise.all(through.map(() => onB.client.next()));
      const epoch = seenA[0][1].epoch as string;
      expect(epoch).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
      const expected = through.map((_, i) => ['message', { topic: 'a.b', offset: i + 1, epoch }, { n: i + 1 }]);
      expect(seenA).toEqual(expected);
      expect(seenB).toEqual(expected);
    });

    it('legacy connections get their frames byte for byte as without history, through either node', async () => {
      const [a, b] = await start();
      const legacy = await a.helloAs('lee');
      const resumable = await optIn(a, 'ann');
      const raw: string[] = [];
      legacy.client.socket.on('message', (data: Buffer) => raw.push(data.toString('utf8')));
      await expectPut(b.apiUrl, `/v1/connection/${legacy.cid}/subscriptions/a/b`);
      await expectPut(b.apiUrl, `/v1/connection/${resumable.cid}/subscriptions/a/b`);
      await expectPublish(a.apiUrl, 'a/b', { n: 1 });
      await expectPublish(b.apiUrl, 'a/b', { n: 2 });
      await legacy.client.next();
      await legacy.client.next();
      expect(raw).toEqual(['["message",{"topic":"a.b"},{"n":1}]', '["message",{"topic":"a.b"},{"n":2}]']);
      expect((await resumable.client.next())[1]).toMatchObject({ topic: 'a.b', offset: 1 });
    });

    it('RESUME_WINDOW=0 keeps the plain cluster path: meta {}, legacy frames, no history keys', async () => {
      const [a, b] = await start({ RESUME_WINDOW: '0s' });
      const { client, hello } = await a.hello({ query: 'user=ann', protocols: optInProtocols() });
      expect(hello).toEqual(['hello', {}, { user_id: 'ann' }]);
      const cid = await a.connectionIdOf('user=ann');
      await expectPut(b.apiUrl, `/v1/connection/${cid}/subscriptions/t1`);
      await expectPublish(b.apiUrl, 't1', 1);
      expect(await client.next()).toEqual(['message', { topic: 't1' }, 1]);
      expect(await keys('t[hp]:*')).toEqual([]);
    });

    it('history keys are one stream and one position hash per topic, trimmed to TOPIC_HISTORY_SIZE, expiring TOPIC_HISTORY_TTL after the last publish', async () => {
      const [a, b] = await start({ TOPIC_HISTORY_SIZE: '3', TOPIC_HISTORY_TTL: '90s' });
      for (let n = 1; n <= 5; n++) await expectPublish((n % 2 === 0 ? a : b).apiUrl, 'x/y', n);
      const [stream] = await keys('th:*');
      const [position] = await keys('tp:*');
      expect(stream).toMatch(/th:\{\d+-[0-9a-z]+\}:x\/y$/);
      expect(position).toMatch(/tp:\{\d+-[0-9a-z]+\}:x\/y$/);
      expect(await redis.xlen(stream)).toBe(3);
      expect((await redis.xrange(stream, '-', '+')).map(([id]) => id)).toEqual(['3-0', '4-0', '5-0']);
      expect(await redis.hget(position, 'o')).toBe('5');
      for (const key of [stream, position]) {
        const ttl = await redis.pttl(key);
        expect(ttl).toBeGreaterThan(80_000);
        expect(ttl).toBeLessThanOrEqual(90_000);
      }
    });

    it('TOPIC_HISTORY_MAX_BYTES: the stream keeps the payload bytes at the bound exactly, counted in the position hash; the oldest go beyond it', async () => {
      const [a, b] = await start({ TOPIC_HISTORY_MAX_BYTES: '1000' });
      const half = JSON.stringify('x'.repeat(498)); // 500 bytes
      await expectPublish(a.apiUrl, 'x/y', 'x'.repeat(498));
      await expectPublish(b.apiUrl, 'x/y', 'x'.repeat(498));
      const [stream] = await keys('th:*');
      const [position] = await keys('tp:*');
      expect((await redis.xrange(stream, '-', '+')).map(([id, fields]) => [id, fields[1]])).toEqual([
        ['1-0', half],
        ['2-0', half],
      ]);
      expect(await redis.hget(position, 'b')).toBe('1000');
      await expectPublish(a.apiUrl, 'x/y', 1);
      expect((await redis.xrange(stream, '-', '+')).map(([id]) => id)).toEqual(['2-0', '3-0']);
      expect(await redis.hget(position, 'b')).toBe('501');
      await expectPublish(b.apiUrl, 'x/y', 'x'.repeat(1000)); // over the bound by itself: not kept, and nothing older either
      expect(await redis.xlen(stream)).toBe(0);
      expect(await redis.hget(position, 'b')).toBe('0');
      expect(await redis.hget(position, 'o')).toBe('4');
    });

    it('TOPIC_HISTORY_MAX_BYTES: missed payloads up to the bound replay; one byte over it and the topic is lost', async () => {
      const [a, b] = await start({ TOPIC_HISTORY_MAX_BYTES: '1000' });
      const { client, resume: first, cid } = await optIn(a, 'ann');
      await expectPut(b.apiUrl, `/v1/connection/${cid}/subscriptions/t1`);
      await dropConnection(client);
      await untilDetached(a, 1);
      const half = 'x'.repeat(498); // 500 bytes of JSON
      await expectPublish(b.apiUrl, 't1', half);
      await expectPublish(a.apiUrl, 't1', half); // 1000 bytes: at the bound
      const { client: again, hello } = await resume(a, 'ann', first.token);
      expect(helloMeta(hello)).toMatchObject({ resumed: true, lost: [] });
      expect((await again.next())[2]).toBe(half);
      const seen = positionOf(await again.next(), 't1');
      await expectNothingMore(again);

      await dropConnection(again);
      await untilDetached(a, 1);
      await expectPublish(b.apiUrl, 't1', half);
      await expectPublish(b.apiUrl, 't1', half);
      await expectPublish(a.apiUrl, 't1', 1); // 1001 bytes missed: the oldest of them was dropped
      const { client: last, hello: lastHello } = await resume(a, 'ann', resumeOf(hello).token, { t1: seen });
      expect(helloMeta(lastHello)).toMatchObject({ resumed: true, lost: ['t1'] });
      await expectNothingMore(last);
    });

    it('TOPIC_HISTORY_SIZE=0 keeps no stream, but offsets still advance', async () => {
      const [a, b] = await start({ TOPIC_HISTORY_SIZE: '0' });
      const onA = await optIn(a, 'ann');
      await expectPut(b.apiUrl, `/v1/connection/${onA.cid}/subscriptions/t1`);
      await expectPublish(a.apiUrl, 't1', 1);
      await expectPublish(b.apiUrl, 't1', 2);
      expect((await onA.client.next())[1]).toMatchObject({ offset: 1 });
      expect((await onA.client.next())[1]).toMatchObject({ offset: 2 });
      expect(await keys('th:*')).toEqual([]);
      expect(await keys('tp:*')).toHaveLength(1);
    });
  });

  describe('order and gaps (12.4)', () => {
    it('a message that never reached the node over pub/sub is filled from the stream before the next one', async () => {
      const [a, b] = await start();
      const onA = await optIn(a, 'ann');
      await expectPut(b.apiUrl, `/v1/connection/${onA.cid}/subscriptions/t1`);
      await expectPublish(b.apiUrl, 't1', 'one');
      const [, meta] = await onA.client.next();
      // Append offset 2 to the history without publishing it: as if its pub/sub message was lost.
      const [stream] = await keys('th:*');
      const [position] = await keys('tp:*');
      await redis.hincrby(position, 'o', 1);
      await redis.xadd(stream, '2-0', 'p', '"two"');
      await expectPublish(b.apiUrl, 't1', 'three');
      expect(await onA.client.next()).toEqual(['message', { topic: 't1', offset: 2, epoch: meta.epoch }, 'two']);
      expect(await onA.client.next()).toEqual(['message', { topic: 't1', offset: 3, epoch: meta.epoch }, 'three']);
      await expectNothingMore(onA.client);
    });

    it('publishes through both nodes at once reach every subscriber exactly once, even without a stream (TOPIC_HISTORY_SIZE=0)', async () => {
      const [a, b] = await start({ TOPIC_HISTORY_SIZE: '0' });
      const onA = await optIn(a, 'ann');
      const legacy = await a.helloAs('lee');
      await expectPut(b.apiUrl, `/v1/connection/${onA.cid}/subscriptions/busy`);
      await expectPut(b.apiUrl, `/v1/connection/${legacy.cid}/subscriptions/busy`);
      const publishers = [a, a, a, b, b, b];
      const perPublisher = 40;
      await Promise.all(
        publishers.map(async (node, p) => {
          for (let n = 0; n < perPublisher; n++) await expectPublish(node.apiUrl, 'busy', [p, n]);
        }),
      );
      const total = publishers.length * perPublisher;
      const offsets: number[] = [];
      for (let i = 0; i < total; i++) offsets.push((await onA.client.next())[1].offset as number);
      expect(offsets).toEqual(Array.from({ length: total }, (_, i) => i + 1));
      const payloads = new Set<string>();
      for (let i = 0; i < total; i++) payloads.add(JSON.stringify((await legacy.client.next())[2]));
      expect(payloads.size).toBe(total);
      await expectNothingMore(legacy.client);
    });

    it('what the history no longer holds is skipped: the client sees the jump', async () => {
      const [a, b] = await start();
      const onA = await optIn(a, 'ann');
      await expectPut(b.apiUrl, `/v1/connection/${onA.cid}/subscriptions/t1`);
      await expectPublish(b.apiUrl, 't1', 'one');
      await onA.client.next();
      const [position] = await keys('tp:*');
      await redis.hincrby(position, 'o', 2); // offsets 2 and 3 were never kept
      await expectPublish(b.apiUrl, 't1', 'four');
      expect((await onA.client.next()).slice(1)).toEqual([
        { topic: 't1', offset: 4, epoch: expect.any(String) },
        'four',
      ]);
      await expectNothingMore(onA.client);
    });
  });

  describe('after a reconnect (12.4)', () => {
    itOnOneRedis(
      'a message published while the node was cut off from Redis arrives once it is back, without a later publish',
      async () => {
        ownRedis = await RedisServer.start();
        const [a, b] = await start({}, ownRedis.url);
        const onA = await optIn(a, 'ann');
        const legacy = await a.helloAs('lee');
        await expectPut(b.apiUrl, `/v1/connection/${onA.cid}/subscriptions/t1`);
        await expectPut(b.apiUrl, `/v1/connection/${legacy.cid}/subscriptions/t1`);
        await expectPublish(b.apiUrl, 't1', 'before');
        const [, meta] = await onA.client.next();
        await legacy.client.next();
        // Cut node A's subscriber off; publish through B before A has reconnected (its first retry waits 100 ms).
        const list = (await redis.client('LIST')) as string;
        const subscriberOfA = list
          .split('\n')
          .find((line) => line.includes('name=gateway:nodeA') && / sub=[1-9]/.test(line));
        expect(subscriberOfA).toBeDefined();
        await redis.client('KILL', 'ID', /\bid=(\d+)/.exec(subscriberOfA!)![1]);
        await expectPublish(b.apiUrl, 't1', 'while-away');
        expect(await onA.client.next(5000)).toEqual([
          'message',
          { topic: 't1', offset: 2, epoch: meta.epoch },
          'while-away',
        ]);
        expect(await legacy.client.next(5000)).toEqual(['message', { topic: 't1' }, 'while-away']);
        await expectNothingMore(onA.client);
      },
    );
  });

  describe('resuming from the Redis history (12.3)', () => {
    it('a resume on the same node replays, in order, what was published through the other node, then snapshots, then live', async () => {
      const [a, b] = await start();
      const { client, resume: first, cid } = await optIn(a, 'ann');
      await expectPut(b.apiUrl, `/v1/connection/${cid}/subscriptions/t1`);
      await expectPut(b.apiUrl, `/v1/connection/${cid}/lattices/ns`, {
        shared: { k: { a_counter: 1 } },
        private: { ann: { k: {} } },
      });
      await client.next(); // lattice snapshot
      await expectPublish(b.apiUrl, 't1', 'seen');
      const seen = positionOf(await client.next(), 't1');
      await dropConnection(client);
      await untilDetached(a, 1);
      await expectPublish(b.apiUrl, 't1', 'missed-1');
      await expectPublish(a.apiUrl, 't1', 'missed-2');
      await expectPublish(b.apiUrl, 't1', 'missed-3');
      const before = await scrapeMetrics(a.apiUrl);

      const { client: again, hello } = await resume(a, 'ann', first.token, { t1: seen });
      expect(helloMeta(hello)).toEqual({ resume: { token: expect.any(String), window: 30 }, resumed: true, lost: [] });
      const epoch = seen[1];
      expect(await again.next()).toEqual(['message', { topic: 't1', offset: 2, epoch }, 'missed-1']);
      expect(await again.next()).toEqual(['message', { topic: 't1', offset: 3, epoch }, 'missed-2']);
      expect(await again.next()).toEqual(['message', { topic: 't1', offset: 4, epoch }, 'missed-3']);
      expect(await again.next()).toEqual(['lattice', { namespace: 'ns' }, { k: { a_counter: 1 } }]);
      await expectPublish(b.apiUrl, 't1', 'live');
      expect(await again.next()).toEqual(['message', { topic: 't1', offset: 5, epoch }, 'live']);
      await expectNothingMore(again);
      const after = await scrapeMetrics(a.apiUrl);
      expect(after.value('gateway_replayed_messages_total') - before.value('gateway_replayed_messages_total')).toBe(3);
    });

    it('a call sent before the resumed hello is answered after the hello and the replay', async () => {
      const [a, b] = await start();
      const { client, resume: first, cid } = await optIn(a, 'ann');
      await expectPut(b.apiUrl, `/v1/connection/${cid}/subscriptions/t1`);
      await dropConnection(client);
      await untilDetached(a, 1);
      await expectPublish(b.apiUrl, 't1', 'missed');
      const again = await a.connect({ query: 'user=ann-resume', protocols: resumeProtocols(first.token) });
      again.send(['test.early', { request_id: 'early' }, [], {}]);
      expect(helloMeta(await again.next())).toMatchObject({ resumed: true, lost: [] });
      expect(await again.next()).toEqual(['message', { topic: 't1', offset: 1, epoch: expect.any(String) }, 'missed']);
      expect(await again.next()).toEqual(['result', { request_id: 'early' }, { args: [], kwargs: {} }]);
      await expectNothingMore(again);
    });

    it('a topic without a client position replays what was published after the session subscribed', async () => {
      const [a, b] = await start();
      await expectPublish(b.apiUrl, 't1', 'before'); // offset 1
      const { client, resume: first, cid } = await optIn(a, 'ann');
      await expectPut(b.apiUrl, `/v1/connection/${cid}/subscriptions/t1`);
      await dropConnection(client);
      await untilDetached(a, 1);
      await expectPublish(b.apiUrl, 't1', 'after'); // offset 2
      const { client: again, hello } = await resume(a, 'ann', first.token);
      expect(helloMeta(hello)).toMatchObject({ resumed: true, lost: [] });
      expect(await again.next()).toEqual(['message', { topic: 't1', offset: 2, epoch: expect.any(String) }, 'after']);
      await expectNothingMore(again);
    });

    it('a low offered position replays only what came after the latest subscription (subscribed late; re-subscribed, resumed on the other node)', async () => {
      const [a, b] = await start();
      await expectPublish(b.apiUrl, 't1', 'before-1');
      await expectPublish(b.apiUrl, 't1', 'before-2');
      const { client, resume: first, cid } = await optIn(a, 'ann');
      await expectPut(b.apiUrl, `/v1/connection/${cid}/subscriptions/t1`); // at offset 2
      await expectPublish(b.apiUrl, 't1', 'seen'); // offset 3
      const epoch = positionOf(await client.next(), 't1')[1];
      await dropConnection(client);
      await untilDetached(a, 1);
      await expectPublish(a.apiUrl, 't1', 'after'); // offset 4
      const { client: again, hello } = await resume(a, 'ann', first.token, { t1: [0, epoch] });
      expect(helloMeta(hello)).toMatchObject({ resumed: true, lost: [] });
      expect(await again.next()).toEqual(['message', { topic: 't1', offset: 3, epoch }, 'seen']);
      expect(await again.next()).toEqual(['message', { topic: 't1', offset: 4, epoch }, 'after']);
      await expectNothingMore(again);

      expect((await api(b.apiUrl, 'DELETE', `/v1/connection/${cid}/subscriptions/t1`)).status).toBe(204);
      await expectPublish(b.apiUrl, 't1', 'unsubscribed'); // offset 5
      await expectPut(b.apiUrl, `/v1/connection/${cid}/subscriptions/t1`); // again, at offset 5
      await dropConnection(again);
      await untilDetached(a, 1);
      await expectPublish(b.apiUrl, 't1', 'after-again'); // offset 6
      // On the other node: the subscription position comes from the session record.
      const { client: last, hello: lastHello } = await resume(b, 'ann', resumeOf(hello).token, { t1: [1, epoch] });
      expect(helloMeta(lastHello)).toMatchObject({ resumed: true, lost: [] });
      expect(await last.next()).toEqual(['message', { topic: 't1', offset: 6, epoch }, 'after-again']);
      await expectNothingMore(last);
    });

    it('publishes racing resumes: every offset exactly once, in order, replayed or live', async () => {
      const [a, b] = await start({ TOPIC_HISTORY_SIZE: '1000' });
      const { client, resume: first, cid } = await optIn(a, 'ann');
      await expectPut(b.apiUrl, `/v1/connection/${cid}/subscriptions/race`);
      await expectPublish(b.apiUrl, 'race', 0);
      let position = positionOf(await client.next(), 'race');
      const from = position[0];
      await dropConnection(client);
      await untilDetached(a, 1);
      // Four publishers per node, several messages in flight at any time.
      const perPublisher = 60;
      const publishers = [a, a, a, a, b, b, b, b];
      const last = from + publishers.length * perPublisher;
      let done = 0;
      const published = Promise.all(
        publishers.map(async (node, p) => {
          for (let n = 0; n < perPublisher; n++) {
            await expectPublish(node.apiUrl, 'race', [p, n]);
            done++;
          }
        }),
      );
      // Resume again and again while they publish. Each round reads past every offset the replay
      // could have covered (at most `done` + the publishes in flight when the hello came), then
      // about 60 live ones (so about 8 rounds: SPEC §12.2 allows 10 resumes in 10 s), then drops the socket.
      const offsets: number[] = [];
      let token = first.token;
      let resumes = 0;
      while (position[0] < last) {
        const { client: again, hello } = await resume(a, 'ann', token, { race: position });
        expect(helloMeta(hello)).toMatchObject({ resumed: true, lost: [] });
        token = resumeOf(hello).token;
        resumes++;
        const until = Math.min(last, from + done + publishers.length + 60);
        while (position[0] < until) {
          position = positionOf(await again.next(5000), 'race');
          offsets.push(position[0]);
        }
        if (position[0] === last) {
          await expectNothingMore(again);
          break;
        }
        await dropConnection(again);
        await untilDetached(a, 1);
      }
      await published;
      expect(resumes).toBeGreaterThan(3);
      expect(offsets).toEqual(Array.from({ length: last - from }, (_, i) => from + 1 + i));
    });

    it('lost when more was missed than TOPIC_HISTORY_SIZE keeps: nothing replayed, live continues', async () => {
      const [a, b] = await start({ TOPIC_HISTORY_SIZE: '2' });
      const { client, resume: first, cid } = await optIn(a, 'ann');
      await expectPut(b.apiUrl, `/v1/connection/${cid}/subscriptions/t1`);
      await expectPut(b.apiUrl, `/v1/connection/${cid}/subscriptions/t2`);
      await expectPublish(b.apiUrl, 't1', 'seen');
      const seen = positionOf(await client.next(), 't1');
      await dropConnection(client);
      await untilDetached(a, 1);
      for (const n of [1, 2, 3]) await expectPublish(b.apiUrl, 't1', n);
      await expectPublish(a.apiUrl, 't2', 'kept');
      const before = await scrapeMetrics(a.apiUrl);
      const { client: again, hello } = await resume(a, 'ann', first.token, { t1: seen });
      expect(helloMeta(hello)).toMatchObject({ resumed: true, lost: ['t1'] });
      expect(await again.next()).toEqual(['message', { topic: 't2', offset: 1, epoch: expect.any(String) }, 'kept']);
      await expectPublish(a.apiUrl, 't1', 'live');
      expect(await again.next()).toEqual(['message', { topic: 't1', offset: 5, epoch: seen[1] }, 'live']);
      await expectNothingMore(again);
      const after = await scrapeMetrics(a.apiUrl);
      expect(after.value('gateway_lost_topics_total') - before.value('gateway_lost_topics_total')).toBe(1);
    });

    it('TOPIC_HISTORY_SIZE=0: a topic with missed messages is lost, one without is not', async () => {
      const [a, b] = await start({ TOPIC_HISTORY_SIZE: '0' });
      const { client, resume: first, cid } = await optIn(a, 'ann');
      await expectPut(b.apiUrl, `/v1/connection/${cid}/subscriptions/t1`);
      await expectPut(b.apiUrl, `/v1/connection/${cid}/subscriptions/quiet`);
      await dropConnection(client);
      await untilDetached(a, 1);
      await expectPublish(b.apiUrl, 't1', 'missed');
      const { client: again, hello } = await resume(a, 'ann', first.token);
      expect(helloMeta(hello)).toMatchObject({ resumed: true, lost: ['t1'] });
      await expectNothingMore(again);
    });

    it('lost when the Redis history was wiped: the topic has a new epoch, live frames start again at 1', async () => {
      const [a, b] = await start();
      const { first, seen } = await seenThenDetached(a, b);
      await expectPublish(b.apiUrl, 't1', 'gone');
      await redis.del(...(await keys('t[hp]:*')));
      await expectPublish(b.apiUrl, 't1', 'new-1');
      const { client: again, hello } = await resume(a, 'ann', first.token, { t1: seen });
      expect(helloMeta(hello)).toMatchObject({ resumed: true, lost: ['t1'] });
      await expectPublish(a.apiUrl, 't1', 'new-2');
      const [, meta, payload] = await again.next();
      expect(payload).toBe('new-2');
      expect(meta).toEqual({ topic: 't1', offset: 2, epoch: expect.any(String) });
      expect(meta.epoch).not.toBe(seen[1]);
      await expectNothingMore(again);
    });

    itOnOneRedis('lost after its own redis-server restarted empty (new epoch)', async () => {
      ownRedis = await RedisServer.start();
      const [a, b] = await start({}, ownRedis.url);
      const { first, cid, seen } = await seenThenDetached(a, b);
      await ownRedis.kill();
      await ownRedis.restart();
      await waitUp(b);
      await waitUp(a);
      // The holder writes its sessions' records again after the reconnect (SPEC §12.5); a resume before that fails.
      const probe = new Redis(ownRedis.url);
      try {
        await untilRedisHas(
          probe,
          async (r) => (await r.exists(new ClusterNames(cluster.prefix).session('ann', cid))) === 1,
          'the session record written again',
        );
      } finally {
        probe.disconnect();
      }
      await expectPublish(b.apiUrl, 't1', 'after-restart');
      const { client: again, hello } = await resume(a, 'ann', first.token, { t1: seen });
      expect(helloMeta(hello)).toMatchObject({ resumed: true, lost: ['t1'] });
      await expectPublish(b.apiUrl, 't1', 'live');
      const [, meta, payload] = await again.next();
      expect([payload, meta.offset]).toEqual(['live', 2]);
      expect(meta.epoch).not.toBe(seen[1]);
    });
  });

  describe('without Redis (12.4)', () => {
    itOnOneRedis(
      'a publish answers 503 cluster_unavailable and reaches no connection, local ones included',
      async () => {
        ownRedis = await RedisServer.start();
        const [a] = await start({}, ownRedis.url);
        const onA = await optIn(a, 'ann');
        const legacy = await a.helloAs('lee');
        await expectPut(a.apiUrl, `/v1/connection/${onA.cid}/subscriptions/t1`);
        await expectPut(a.apiUrl, `/v1/connection/${legacy.cid}/subscriptions/t1`);
        await ownRedis.kill();
        await waitDown(a);
        const res = await api(a.apiUrl, 'POST', '/v1/publish/t1', '"lost"');
        expect(res.status).toBe(503);
        expect(JSON.parse(res.text)).toEqual({ error: 'cluster_unavailable', message: expect.any(String) });
        const batch = await api(a.apiUrl, 'POST', '/v1/batch', {
          commands: [{ method: 'POST', path: '/v1/publish/t1', body: 1 }],
        });
        expect(batch.status).toBe(200);
        expect((JSON.parse(batch.text) as { results: unknown[] }).results).toEqual([
          { status: 503, error: 'cluster_unavailable', message: expect.any(String) },
        ]);
        await expectNothingMore(onA.client);
        await expectNothingMore(legacy.client);
      },
    );
  });

  async function waitUp(node: TestGateway): Promise<void> {
    await untilMetric(node.apiUrl, 'gateway_redis_up{shard="control"}', (v) => v === 1, 10_000);
  }

  async function waitDown(node: TestGateway): Promise<void> {
    await untilMetric(node.apiUrl, 'gateway_redis_up{shard="control"}', (v) => v === 0, 10_000);
  }
});
