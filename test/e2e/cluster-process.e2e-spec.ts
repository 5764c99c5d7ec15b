import { ChildGateway } from './harness/child-gateway';
import { TEST_REDIS_URL, randomPrefix } from './harness/cluster';
import { FakeUpstream } from './harness/fake-upstream';
import { TestGateway, startTestGateway } from './harness/gateway';
import { api } from './harness/http';
import { connectionIdOf } from './harness/v1';
import { Frame, WsClient } from './harness/ws-client';

type Register = [number, string];
const START_MS = 15_000;

/** SPEC §11 with real processes: node death, drain, restart (dist/main.js is built by the e2e globalSetup). */
describe('cluster: nodes as processes (SPEC §11)', () => {
  let upstream: FakeUpstream;
  let prefix: string;
  let node: TestGateway;
  const children: ChildGateway[] = [];
  const clients: WsClient[] = [];

  beforeEach(async () => {
    upstream = await FakeUpstream.start();
    prefix = randomPrefix();
    node = await startTestGateway(
      { REDIS_URL: TEST_REDIS_URL, REDIS_PREFIX: prefix, NODE_ID: 'nodeA' },
      undefined,
      upstream,
    );
  });
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((client) => client.close()));
    await Promise.all(children.splice(0).map((child) => child.stop()));
    await node.close();
    await upstream.close();
  });

  async function startChild(nodeId: string): Promise<ChildGateway> {
    const child = await ChildGateway.start(
      {
        UPSTREAM_URL: upstream.url,
        REDIS_URL: TEST_REDIS_URL,
        REDIS_PREFIX: prefix,
        NODE_ID: nodeId,
        LOG_LEVEL: 'info',
        SHUTDOWN_GRACE: '1s',
      },
      START_MS,
    );
    children.push(child);
    return child;
  }

  async function helloOn(child: ChildGateway, user: string): Promise<{ client: WsClient; cid: string }> {
    const query = `user=${user}&at=${Math.random()}`;
    const { client } = await WsClient.hello(child.wsUrl, { query });
    clients.push(client);
    return { client, cid: await connectionIdOf(upstream, query) };
  }

  async function watch(user: string): Promise<WsClient> {
    const alice = await node.helloAs('alice');
    expect((await api(node.apiUrl, 'PUT', `/v1/connection/${alice.cid}/users`, [user])).status).toBe(204);
    return alice.client;
  }

  async function nextStatusOf(client: WsClient, user: string, ms: number): Promise<Register> {
    const frame: Frame = await client.next(ms);
    const statuses = frame[2] as Record<string, { status_register: Register }>;
    expect(Object.keys(statuses)).toEqual([user]);
    return statuses[user].status_register;
  }

  it('notices a SIGKILLed node within 15 s: its users go offline for watchers on other nodes', async () => {
    const child = await startChild('nodeK');
    await helloOn(child, 'bob');
    const watcher = await watch('bob');
    expect((await nextStatusOf(watcher, 'bob', 2000))[1]).toBe('active');
    const killedAt = Date.now();
    child.kill('SIGKILL');
    expect((await nextStatusOf(watcher, 'bob', 15_000))[1]).toBe('offline');
    expect(Date.now() - killedAt).toBeLessThan(15_000);
  }, 30_000);

  it("withdraws a draining node's presence before it exits (watchers see offline at once)", async () => {
    const child = await startChild('nodeD');
    await helloOn(child, 'bob');
    const watcher = await watch('bob');
    expect((await nextStatusOf(watcher, 'bob', 2000))[1]).toBe('active');
    child.kill('SIGTERM');
    expect((await child.exit(5000)).code).toBe(0);
    // The liveness key would keep a dead node "alive" for 10 s: this is the drain, not the reaper.
    expect((await nextStatusOf(watcher, 'bob', 1000))[1]).toBe('offline');
  }, 30_000);

  it('gives a restarted node the merged lattice state, its NODE_ID free again after the drain', async () => {
    const first = await startChild('nodeR');
    expect((await api(first.apiUrl, 'POST', '/v1/lattice/rooms', { shared: { r1: { msg_counter: 3 } } })).status).toBe(
      204,
    );
    expect(
      (
        await api(node.apiUrl, 'POST', '/v1/lattice/rooms', {
          shared: { r1: { tags_set: ['a'] } },
          private: { bob: { r1: { seen_counter: 1 } } },
        })
      ).status,
    ).toBe(204);
    first.kill('SIGTERM');
    await first.exit(5000);
    const second = await startChild('nodeR');
    const bob = await helloOn(second, 'bob');
    expect(
      (await api(node.apiUrl, 'PUT', `/v1/connection/${bob.cid}/lattices/rooms`, { private: { bob: { r1: {} } } }))
        .status,
    ).toBe(204);
    expect(await bob.client.next()).toEqual([
      'lattice',
      { namespace: 'rooms' },
      { r1: { msg_counter: 3, tags_set: ['a'], seen_counter: 1 } },
    ]);
  }, 30_000);

  it('refuses to start a node whose NODE_ID a live node holds, with a configuration error', async () => {
    await expect(
      ChildGateway.start(
        { UPSTREAM_URL: upstream.url, REDIS_URL: TEST_REDIS_URL, REDIS_PREFIX: prefix, NODE_ID: 'nodeA' },
        START_MS,
      ),
    ).rejects.toThrow(/invalid configuration:\s+NODE_ID: "nodeA" is held by a live node/);
  });
});
