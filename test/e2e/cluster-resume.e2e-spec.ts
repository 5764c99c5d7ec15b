import Redis from 'ioredis';
import { ClusterNames } from '../../src/cluster/channels';
import { ChildGateway } from './harness/child-gateway';
import { TEST_REDIS_URL, TestCluster, randomPrefix, startTestCluster } from './harness/cluster';
import { testShardsEnv } from './harness/test-redis';
import { itOnOneRedis, topologyRedis } from './harness/topology-redis';
import { ProcessCluster, StatusMirror, untilRedisHas, untilRedisState } from './harness/cluster-nodes';
import { RedisServer } from './harness/redis-server';
import { FakeUpstream } from './harness/fake-upstream';
import { TestGateway, startTestGateway } from './harness/gateway';
import { api } from './harness/http';
import { scrapeMetrics, untilMetric } from './harness/metrics';
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
import { Frame, HandshakeRefused, WsClient } from './harness/ws-client';
import { connectionIdOf, expectPut, expectPublish } from './harness/v1';
import { expectNothingMore } from './harness/barrier';

/** Anything a gateway node serves: an in-process one or a child process. */
interface Node {
  readonly wsUrl: string;
  readonly apiUrl: string;
}

let queries = 0;

function authRequests(upstream: FakeUpstream): number {
  return upstream.requests.filter((r) => r.path.endsWith('/gateway/authorize_connection')).length;
}

/** The next frame, checked to be a message of `topic` carrying `payload` (positions are the HISTORY part's). */
async function expectMessage(client: WsClient, topic: string, payload: unknown, ms = 2000): Promise<Frame> {
  const frame = await client.next(ms);
  expect([frame[0], frame[1].topic, frame[2]]).toEqual(['message', topic, payload]);
  return frame;
}

/** A `gateway.user` watcher: every status it was sent, whether read yet or not. */
class Watcher extends StatusMirror {
  constructor(readonly socket: WsClient) {
    super(socket);
  }

  /** Every status of `user` the client received so far, in order (its first snapshot included). */
  statusesOf(user: string): string[] {
    const out: string[] = [];
    for (const frame of this.socket.frames) {
      const entry =
        frame[0] === 'lattice' && frame[1].namespace === 'gateway.user'
          ? (frame[2] as Record<string, { status_register: [number, string] }>)[user]
          : undefined;
      if (entry !== undefined) out.push(entry.status_register[1]);
    }
    return out;
  }

  /** Every frame sent to it before now has arrived (a call's reply comes after them). */
  async barrier(): Promise<void> {
    await expectNothingMore(this.socket);
  }
}

/** SPEC §12.5 and the cluster side of §12.2/§12.3: sessions resume on any node. */
describe('cluster: resumable sessions (SPEC §12.5)', () => {
  const clients: WsClient[] = [];
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((client) => client.close()));
  });

  /** Resume with `token` (a fallback's authorization would be of user `<user>-resume`). */
  async function resume(
    node: Node,
    user: string,
    token: string,
    positions: Record<string, Position> = {},
  ): Promise<{ client: WsClient; hello: Frame; resume: ResumeMeta }> {
    const { client, hello } = await WsClient.hello(node.wsUrl, {
      query: `user=${user}-resume&q=${++queries}`,
      protocols: resumeProtocols(token, positions),
    });
    clients.push(client);
    return { client, hello, resume: resumeOf(hello) };
  }

  /** A watcher of `user` (on another connection), once its first snapshot came. */
  async function watcherOf(node: Node, upstream: FakeUpstream, user: string, others: string[] = []): Promise<Watcher> {
    const query = `user=wat&q=${++queries}`;
    const { client } = await WsClient.hello(node.wsUrl, { query });
    clients.push(client);
    await expectPut(node.apiUrl, `/v1/connection/${await connectionIdOf(upstream, query)}/users`, [user, ...others]);
    const watcher = new Watcher(client);
    await watcher.until(user, 'offline', 3000);
    return watcher;
  }

  describe('in-process nodes', () => {
    let c: TestCluster;
    let a: TestGateway;
    let b: TestGateway;
    let x: TestGateway;
    afterEach(() => c.close());

    async function start(env: Record<string, string> = {}): Promise<void> {
      c = await startTestCluster(3, env);
      [a, b, x] = c.nodes;
    }

    it('resumes on node B a session born on node A: same cid, no authorization, subscriptions, lattice data, watch list', async () => {
      await start();
      const { client, resume: first, cid } = await optIn(a, 'ann');
      await expectPut(x.apiUrl, `/v1/connection/${cid}/subscriptions/t1`);
      await expectPut(x.apiUrl, `/v1/connection/${cid}/lattices/ns`, {
        shared: { k: { a_counter: 1 } },
        private: { ann: { k: { mine_counter: 2 } } },
      });
      await expectPut(x.apiUrl, `/v1/connection/${cid}/users`, ['bob']);
      expect(await client.next()).toEqual(['lattice', { namespace: 'ns' }, { k: { a_counter: 1, mine_counter: 2 } }]);
      expect((await client.next())[1]).toEqual({ namespace: 'gateway.user' });
      await dropConnection(client);
      await untilMetric(a.apiUrl, 'gateway_sessions_detached', (v) => v === 1);
      // The backend changes the lattice while the session is detached.
      expect(
        (await api(x.apiUrl, 'POST', '/v1/lattice/ns', { private: { ann: { k: { mine_counter: 3 } } } })).status,
      ).toBe(204);
      const auths = authRequests(c.upstream);

      const { client: again, hello, resume: second } = await resume(b, 'ann', first.token);
      expect(authRequests(c.upstream)).toBe(auths);
      expect(helloMeta(hello)).toEqual({ resume: { token: second.token, window: 30 }, resumed: true, lost: [] });
      expect(second.token).not.toBe(first.token);
      expect(hello[2]).toEqual({ user_id: 'ann' });
      expect(await again.next()).toEqual(['lattice', { namespace: 'ns' }, { k: { a_counter: 1, mine_counter: 3 } }]);
      expect(await again.next()).toEqual([
        'lattice',
        { namespace: 'gateway.user' },
        { bob: { status_register: [0, 'offline'] } },
      ]);
      await expectPublish(x.apiUrl, 't1', 'after');
      await expectMessage(again, 't1', 'after');
      await untilMetric(a.apiUrl, 'gateway_sessions_detached', (v) => v === 0);
      expect((await scrapeMetrics(b.apiUrl)).value('gateway_resumes_total{result="resumed"}')).toBe(1);
      // A call from the resumed socket carries the same connection id upstream.
      await again.call('test.echo', { request_id: 1 });
      const call = await c.upstream.nextRequest((r) => r.path.endsWith('/test/echo'));
      expect((call.body as [{ connection_id: string }])[0].connection_id).toBe(cid);
      await expectNothingMore(again);
      const logs = [...a.logs, ...b.logs, ...x.logs].join('\n');
      expect(logs).toContain('session taken over');
      expect(logs).not.toContain(first.token);
      expect(logs).not.toContain(second.token);
    });

    it('a command that reaches the old holder after a takeover, before its notice, is sent on to the new holder', async () => {
      await start();
      const { client, cid } = await optIn(a, 'ann');
      await expectPut(x.apiUrl, `/v1/connection/${cid}/subscriptions/t1`);
      // The takeover by node B as node A sees it before the notice arrives: the record names B.
      const redis = topologyRedis();
      try {
        await redis.hset(new ClusterNames(c.prefix).session('ann', cid), 'n', 'nodeB');
        await expectPut(x.apiUrl, `/v1/connection/${cid}/subscriptions/t2`);
        // Node A learnt it from its record write: its copy is handed over (4409), never written into B's record.
        expect(await client.closed(3000)).toEqual({ code: 4409, reason: 'session_resumed' });
        expect(await redis.hget(new ClusterNames(c.prefix).session('ann', cid), 't:t2')).toBeNull();
        expect(await redis.hget(new ClusterNames(c.prefix).session('ann', cid), 'n')).toBe('nodeB');
      } finally {
        redis.disconnect();
      }
      expect(a.logs.join('\n')).not.toContain('remote command failed');
    });

    it('closes the half-open old socket on node A with 4409 session_resumed; presence stays', async () => {
      await start();
      const watcher = await watcherOf(x, c.upstream, 'ann');
      const { client, resume: first, cid } = await optIn(a, 'ann');
      await watcher.until('ann', 'active', 2000);
      await expectPut(a.apiUrl, `/v1/connection/${cid}/subscriptions/t1`);
      const { client: again, hello } = await resume(b, 'ann', first.token);
      expect(helloMeta(hello)).toMatchObject({ resumed: true, lost: [] });
      expect(await client.closed(3000)).toEqual({ code: 4409, reason: 'session_resumed' });
      await expectPublish(a.apiUrl, 't1', 'after');
      await expectMessage(again, 't1', 'after');
      await expectNothingMore(again);
      await watcher.barrier();
      expect(watcher.statusesOf('ann')).toEqual(['offline', 'active']);
    });

    it('routes /v1 commands for a moved cid to its new node: 204 once in effect there; DELETE closes it with 4403', async () => {
      await start();
      const { client, resume: first, cid } = await optIn(a, 'ann');
      await dropConnection(client);
      const { client: again } = await resume(b, 'ann', first.token);
      // Through the birth node, through the new node and through a third node.
      for (const [node, topic] of [
        [a, 't1'],
        [b, 't2'],
        [x, 't3'],
      ] as const) {
        await expectPut(node.apiUrl, `/v1/connection/${cid}/subscriptions/${topic}`);
        await expectPublish(x.apiUrl, topic, topic);
        await expectMessage(again, topic, topic);
      }
      await expectPut(a.apiUrl, `/v1/connection/${cid}/lattices/ns`, {
        shared: { k: { a_counter: 7 } },
        private: { ann: { k: {} } },
      });
      expect(await again.next()).toEqual(['lattice', { namespace: 'ns' }, { k: { a_counter: 7 } }]);
      const res = await api(x.apiUrl, 'DELETE', `/v1/connection/${cid}`);
      expect(res.status).toBe(204);
      expect(await again.closed()).toEqual({ code: 4403, reason: 'disconnected' });
      // Ended: the latest token resumes nothing.
      const { hello } = await resume(a, 'ann', resumeOf(again.frames[0]).token);
      expect(helloMeta(hello)).toMatchObject({ resumed: false });
    });

    it('resumes A → B → A → B, each time with the latest token', async () => {
      await start();
      let { client, resume: current, cid } = await optIn(a, 'ann');
      await expectPut(x.apiUrl, `/v1/connection/${cid}/subscriptions/t1`);
      const order = [b, a, b];
      // What the client received, as it offers it on resume (without it, a topic replays from its subscription).
      const positions: Record<string, Position> = {};
      for (let round = 0; round < order.length; round++) {
        await dropConnection(client);
        const resumed = await resume(order[round], 'ann', current.token, positions);
        expect(helloMeta(resumed.hello)).toMatchObject({ resumed: true, lost: [] });
        client = resumed.client;
        current = resumed.resume;
        await expectPublish(x.apiUrl, 't1', round);
        positions.t1 = positionOf(await expectMessage(client, 't1', round), 't1');
        await expectPut(x.apiUrl, `/v1/connection/${cid}/subscriptions/r${round}`);
        await expectPublish(x.apiUrl, `r${round}`, 'cmd');
        positions[`r${round}`] = positionOf(await expectMessage(client, `r${round}`, 'cmd'), `r${round}`);
      }
      await untilMetric(a.apiUrl, 'gateway_sessions_detached', (v) => v === 0);
      await expectNothingMore(client);
    });

    it('RESUME_MAX_DETACHED_PER_USER: the oldest detached session ended by one more cannot be resumed on another node either', async () => {
      await start({ RESUME_MAX_DETACHED_PER_USER: '1' });
      const older = await optIn(a, 'mal');
      const newer = await optIn(a, 'mal');
      await dropConnection(older.client);
      await untilMetric(a.apiUrl, 'gateway_sessions_detached', (v) => v === 1);
      await dropConnection(newer.client);
      // The older one ends as its window end would: its record goes from Redis.
      const redis = topologyRedis();
      try {
        await untilRedisHas(
          redis,
          async (r) => (await r.exists(new ClusterNames(c.prefix).session('mal', older.cid))) === 0,
          "the older session's record gone",
        );
      } finally {
        redis.disconnect();
      }
      await untilMetric(a.apiUrl, 'gateway_sessions_detached', (v) => v === 1);
      const ended = await resume(b, 'mal', older.resume.token);
      expect(helloMeta(ended.hello)).toMatchObject({ resumed: false });
      expect((await scrapeMetrics(b.apiUrl)).value('gateway_resumes_total{result="expired"}')).toBe(1);
      const kept = await resume(b, 'mal', newer.resume.token);
      expect(helloMeta(kept.hello)).toMatchObject({ resumed: true, lost: [] });
    });

    it('a session resumed in a loop across nodes gets 10 resumes in 10 s in all, not per node: then HTTP 429 with Retry-After on any node', async () => {
      await start();
      const { resume: first, cid } = await optIn(a, 'ann');
      let token = first.token;
      for (let round = 0; round < 10; round++) {
        const resumed = await resume(round % 2 === 0 ? b : a, 'ann', token);
        expect(helloMeta(resumed.hello)).toMatchObject({ resumed: true });
        token = resumed.resume.token;
      }
      const auths = authRequests(c.upstream);
      for (const node of [a, b, x]) {
        const refused = await WsClient.connect(node.wsUrl, {
          query: 'user=ann-resume',
          protocols: resumeProtocols(token),
        }).then(
          () => null,
          (err: HandshakeRefused) => err,
        );
        expect(refused).toMatchObject({ status: 429 });
        expect(Number(refused!.headers['retry-after'])).toBeGreaterThanOrEqual(1);
        expect(Number(refused!.headers['retry-after'])).toBeLessThanOrEqual(10);
      }
      expect(authRequests(c.upstream)).toBe(auths);
      // One small key of the session, gone with its window.
      const redis = topologyRedis();
      try {
        const rate = new ClusterNames(c.prefix).resumeRate(cid);
        expect(await redis.get(rate)).toBe('10'); // the resumes that succeeded; refused ones count nothing
        expect(await redis.pttl(rate)).toBeLessThanOrEqual(10_000);
      } finally {
        redis.disconnect();
      }
    });

    it('a used token and an expired token fall back to a normal connect with resumed: false; the ended record is gone', async () => {
      await start({ RESUME_WINDOW: '1s' });
      const { client, resume: first, cid } = await optIn(a, 'ann');
      await dropConnection(client);
      const { client: again } = await resume(b, 'ann', first.token);
      const used = await resume(x, 'ann', first.token);
      expect(helloMeta(used.hello)).toEqual({ resume: { token: expect.any(String), window: 1 }, resumed: false });
      expect(used.hello[2]).toEqual({ user_id: 'ann-resume' });
      expect((await scrapeMetrics(x.apiUrl)).value('gateway_resumes_total{result="invalid"}')).toBe(1);
      await expectNothingMore(again);
      // Expired: its window passes while detached on B.
      const latest = resumeOf(again.frames[0]).token;
      await dropConnection(again);
      await untilMetric(b.apiUrl, 'gateway_sessions_detached', (v) => v === 1);
      await untilMetric(b.apiUrl, 'gateway_sessions_detached', (v) => v === 0, 3000);
      const expired = await resume(a, 'ann', latest);
      expect(helloMeta(expired.hello)).toMatchObject({ resumed: false });
      expect((await scrapeMetrics(a.apiUrl)).value('gateway_resumes_total{result="expired"}')).toBe(1);
      await expectNothingMore(expired.client);
      const redis = topologyRedis();
      try {
        expect(await redis.exists(new ClusterNames(c.prefix).session('ann', cid))).toBe(0);
      } finally {
        redis.disconnect();
      }
    });
  });

  describe('two handlers', () => {
    const handlers = (url: string) => `
destinations:
  app: { url: "${url}" }
handlers:
  one: { path: /one, message_handlers: { "*": app/ } }
  two: { path: /two, message_handlers: { "*": app/ } }
`;
    let upstream: FakeUpstream;
    const nodes: TestGateway[] = [];
    afterEach(async () => {
      await Promise.all(nodes.splice(0).map((node) => node.close()));
      await upstream.close();
    });

    it('a token of another handler falls back to a normal connect on that handler, and stays valid on its own', async () => {
      upstream = await FakeUpstream.start();
      const prefix = randomPrefix();
      for (const nodeId of ['nodeA', 'nodeB'])
        nodes.push(
          await startTestGateway(
            { REDIS_URL: TEST_REDIS_URL, ...testShardsEnv(), REDIS_PREFIX: prefix, NODE_ID: nodeId },
            handlers,
            upstream,
          ),
        );
      const [a, b] = nodes;
      const query = `user=ann&q=${++queries}`;
      const { client, hello } = await WsClient.hello(a.wsUrl, { path: '/one', query, protocols: optInProtocols() });
      clients.push(client);
      const token = resumeOf(hello).token;
      await dropConnection(client);
      const other = await WsClient.hello(b.wsUrl, {
        path: '/two',
        query: `user=eve&q=${++queries}`,
        protocols: resumeProtocols(token),
      });
      clients.push(other.client);
      expect(helloMeta(other.hello)).toMatchObject({ resumed: false });
      expect(other.hello[2]).toEqual({ user_id: 'eve' });
      const same = await WsClient.hello(b.wsUrl, {
        path: '/one',
        query: `user=x&q=${++queries}`,
        protocols: resumeProtocols(token),
      });
      clients.push(same.client);
      expect(helloMeta(same.hello)).toMatchObject({ resumed: true });
      expect(same.hello[2]).toEqual({ user_id: 'ann' });
    });
  });

  describe('Redis restarted empty', () => {
    let redis: RedisServer;
    let upstream: FakeUpstream;
    const nodes: TestGateway[] = [];
    afterEach(async () => {
      await Promise.all(clients.splice(0).map((client) => client.close()));
      await Promise.all(nodes.splice(0).map((node) => node.close()));
      await upstream.close();
      await redis.kill();
    });

    itOnOneRedis(
      "the holder writes its sessions' records again: they resume on another node with their subscriptions",
      async () => {
        redis = await RedisServer.start();
        upstream = await FakeUpstream.start();
        const prefix = randomPrefix();
        for (const nodeId of ['nodeA', 'nodeB'])
          nodes.push(
            await startTestGateway(
              { REDIS_URL: redis.url, REDIS_PREFIX: prefix, NODE_ID: nodeId },
              undefined,
              upstream,
            ),
          );
        const [a, b] = nodes;
        const { client, resume: first, cid } = await optIn(a, 'ann', { upstream, clients });
        await expectPut(b.apiUrl, `/v1/connection/${cid}/subscriptions/t1`);
        await redis.kill();
        await untilRedisState(a.apiUrl, 'down');
        await redis.restart();
        await untilRedisState(a.apiUrl, 'up');
        await untilRedisState(b.apiUrl, 'up');
        const probe = new Redis(redis.url);
        try {
          await untilRedisHas(
            probe,
            async (r) => (await r.hget(new ClusterNames(prefix).session('ann', cid), 't:t1')) !== null,
            'the record written again',
          );
        } finally {
          probe.disconnect();
        }
        await dropConnection(client);
        const { client: again, hello } = await resume(b, 'ann', first.token);
        expect(helloMeta(hello)).toMatchObject({ resumed: true });
        await expectPublish(b.apiUrl, 't1', 'after');
        await expectMessage(again, 't1', 'after');
      },
      30_000,
    );
  });

  describe('nodes as processes', () => {
    let upstream: FakeUpstream;
    let cluster: ProcessCluster;
    let watchNode: TestGateway;
    let prefix: string;
    beforeEach(async () => {
      upstream = await FakeUpstream.start();
      prefix = randomPrefix();
      cluster = new ProcessCluster(upstream, TEST_REDIS_URL, prefix, { RESUME_WINDOW: '20s' });
      watchNode = await startTestGateway(
        { REDIS_URL: TEST_REDIS_URL, ...testShardsEnv(), REDIS_PREFIX: prefix, NODE_ID: 'nodeW', RESUME_WINDOW: '20s' },
        undefined,
        upstream,
      );
    });
    afterEach(async () => {
      await cluster.close();
      await watchNode.close();
      await upstream.close();
    });

    it('SIGKILL of the holder: the session resumes on another node at once, and watchers never see it offline', async () => {
      const nodeK: ChildGateway = await cluster.start('nodeK');
      const watcher = await watcherOf(watchNode, upstream, 'ann', ['bob']);
      const { resume: first, cid } = await optIn(nodeK, 'ann', { upstream, clients });
      await watcher.until('ann', 'active', 3000);
      // A legacy connection on the same node: it ends with its node (SPEC §11).
      await cluster.hello(nodeK, 'bob');
      await watcher.until('bob', 'active', 3000);
      await expectPut(watchNode.apiUrl, `/v1/connection/${cid}/subscriptions/t1`);
      await expectPut(watchNode.apiUrl, `/v1/connection/${cid}/lattices/ns`, {
        private: { ann: { k: { v_counter: 4 } } },
      });
      nodeK.kill('SIGKILL');
      await nodeK.exit(5000);
      const { client: again, hello } = await resume(watchNode, 'ann', first.token);
      expect(helloMeta(hello)).toMatchObject({ resumed: true });
      expect(await again.next()).toEqual(['lattice', { namespace: 'ns' }, { k: { v_counter: 4 } }]);
      await expectPublish(watchNode.apiUrl, 't1', 'after');
      await expectMessage(again, 't1', 'after');
      // The dead node is reaped (≤ 15 s): ann keeps her count on the new node.
      const other = await cluster.start('nodeO');
      await expectPut(other.apiUrl, `/v1/connection/${cid}/subscriptions/t2`);
      await expectPublish(other.apiUrl, 't2', 'routed');
      await expectMessage(again, 't2', 'routed');
      // Once the dead node is reaped (≤ 15 s), its presence is gone, and ann's stayed.
      const redis = topologyRedis();
      try {
        await untilRedisHas(
          redis,
          async (r) => (await r.sismember(new ClusterNames(prefix).nodes, 'nodeK')) === 0,
          'nodeK reaped',
          20_000,
        );
      } finally {
        redis.disconnect();
      }
      await watcher.until('bob', 'offline', 5000);
      await watcher.barrier();
      expect(watcher.statusesOf('ann')).toEqual(['offline', 'active']);
      expect(watcher.statusesOf('bob')).toEqual(['offline', 'active', 'offline']);
    }, 60_000);

    it('SIGTERM drain: 1012, presence unchanged, then a resume on the other node', async () => {
      const nodeD = await cluster.start('nodeD');
      const watcher = await watcherOf(watchNode, upstream, 'ann', ['bob']);
      const ann = await optIn(nodeD, 'ann', { upstream, clients });
      await watcher.until('ann', 'active', 3000);
      const bob = await cluster.hello(nodeD, 'bob');
      await watcher.until('bob', 'active', 3000);
      await expectPut(watchNode.apiUrl, `/v1/connection/${ann.cid}/subscriptions/t1`);
      nodeD.kill('SIGTERM');
      expect(await ann.client.closed(5000)).toEqual({ code: 1012, reason: 'service_restart' });
      expect(await bob.client.closed(5000)).toEqual({ code: 1001, reason: 'shutdown' });
      expect((await nodeD.exit(5000)).code).toBe(0);
      // The legacy connection's presence went with the drain (SPEC §11), the resumable one's stayed.
      await watcher.until('bob', 'offline', 2000);
      // Held by no node now: /v1 commands apply to the detached session (SPEC §12.2), through its record.
      await expectPut(watchNode.apiUrl, `/v1/connection/${ann.cid}/subscriptions/t2`);
      await expectPut(watchNode.apiUrl, `/v1/connection/${ann.cid}/lattices/ns`, {
        private: { ann: { k: { v_counter: 2 } } },
      });
      await expectPut(watchNode.apiUrl, `/v1/connection/${ann.cid}/users`, ['bob']);
      await expectPut(watchNode.apiUrl, '/v1/user/ann/users', ['carl']);
      const { client: again, hello } = await resume(watchNode, 'ann', ann.resume.token);
      expect(helloMeta(hello)).toMatchObject({ resumed: true });
      expect(await again.next()).toEqual(['lattice', { namespace: 'ns' }, { k: { v_counter: 2 } }]);
      expect(await again.next()).toEqual([
        'lattice',
        { namespace: 'gateway.user' },
        { bob: { status_register: [expect.any(Number), 'offline'] }, carl: { status_register: [0, 'offline'] } },
      ]);
      await expectPublish(watchNode.apiUrl, 't1', 'after');
      await expectMessage(again, 't1', 'after');
      await expectPublish(watchNode.apiUrl, 't2', 'while-detached');
      await expectMessage(again, 't2', 'while-detached');
      await watcher.barrier();
      expect(watcher.statusesOf('ann')).toEqual(['offline', 'active']);
      expect(watcher.statusesOf('bob')).toEqual(['offline', 'active', 'offline']);
    }, 60_000);

    it('a topic subscribed while no node holds the session replays only what was published after that subscribe', async () => {
      const nodeD = await cluster.start('nodeD');
      const ann = await optIn(nodeD, 'ann', { upstream, clients });
      nodeD.kill('SIGTERM');
      expect(await ann.client.closed(5000)).toEqual({ code: 1012, reason: 'service_restart' });
      await nodeD.exit(5000);
      await expectPublish(watchNode.apiUrl, 'late', 'before-subscribe');
      await expectPut(watchNode.apiUrl, `/v1/connection/${ann.cid}/subscriptions/late`);
      await expectPublish(watchNode.apiUrl, 'late', 'after-subscribe');
      const { client: again, hello } = await resume(watchNode, 'ann', ann.resume.token);
      expect(helloMeta(hello)).toMatchObject({ resumed: true, lost: [] });
      const replayed = await expectMessage(again, 'late', 'after-subscribe');
      expect(replayed[1]).toMatchObject({ offset: 2 });
      await expectNothingMore(again);
    }, 60_000);

    it.each([
      ['/v1/connection/<cid>', (cid: string) => `/v1/connection/${cid}`],
      ['/v1/user/ann/connections', () => '/v1/user/ann/connections'],
    ])(
      'DELETE %s of a session whose node drained ends it: its token resumes nothing',
      async (_, path) => {
        const nodeD = await cluster.start('nodeD');
        const ann = await optIn(nodeD, 'ann', { upstream, clients });
        nodeD.kill('SIGTERM');
        expect(await ann.client.closed(5000)).toEqual({ code: 1012, reason: 'service_restart' });
        await nodeD.exit(5000);
        expect((await api(watchNode.apiUrl, 'DELETE', path(ann.cid))).status).toBe(204);
        const { hello } = await resume(watchNode, 'ann', ann.resume.token);
        expect(helloMeta(hello)).toMatchObject({ resumed: false });
        expect((await scrapeMetrics(watchNode.apiUrl)).value('gateway_resumes_total{result="expired"}')).toBe(1);
      },
      60_000,
    );

    it('node death with nobody resuming: the user stays present until the window ends, then offline', async () => {
      await cluster.close();
      cluster = new ProcessCluster(upstream, TEST_REDIS_URL, prefix, {
        RESUME_WINDOW: '3s',
        NEW_CONNECTION_IDLE_TIMEOUT: '1s',
      });
      const nodeK = await cluster.start('nodeK');
      const watcher = await watcherOf(watchNode, upstream, 'ann');
      const { cid, resume: first } = await optIn(nodeK, 'ann', { upstream, clients });
      await watcher.until('ann', 'active', 3000);
      nodeK.kill('SIGKILL');
      // Declared dead (≤ 15 s): the session is detached from then on, held by no node, for its 3 s window.
      const redis = topologyRedis();
      let detachedAt: number;
      try {
        await untilRedisHas(
          redis,
          async (r) => (await r.hget(new ClusterNames(prefix).session('ann', cid), 'n')) === '',
          'the orphaned session',
          20_000,
        );
        detachedAt = Date.now();
      } finally {
        redis.disconnect();
      }
      // The deadline passed meanwhile: inactive, never offline, while the session counts.
      const offlineAt = await watcher.until('ann', 'offline', 10_000);
      expect(watcher.statusesOf('ann')).toEqual(['offline', 'active', 'inactive', 'offline']);
      expect(offlineAt - detachedAt).toBeGreaterThanOrEqual(2500);
      // Its window is over: its token resumes nothing.
      const { hello } = await resume(watchNode, 'ann', first.token);
      expect(helloMeta(hello)).toMatchObject({ resumed: false });
      expect((await scrapeMetrics(watchNode.apiUrl)).value('gateway_resumes_total{result="expired"}')).toBe(1);
    }, 60_000);
  });
});
