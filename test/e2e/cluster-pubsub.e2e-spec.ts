import { TestCluster, startTestCluster } from './harness/cluster';
import { api } from './harness/http';

describe('cluster: pub/sub across nodes (SPEC §11)', () => {
  let cluster: TestCluster;
  beforeEach(async () => (cluster = await startTestCluster(3)));
  afterEach(() => cluster.close());

  it('delivers a publish made through node B to a client on node C subscribed through node A', async () => {
    const [a, b, c] = cluster.nodes;
    const { client, cid } = await c.helloAs('carol');
    expect((await api(a.apiUrl, 'PUT', `/v1/connection/${cid}/subscriptions/room/1`)).status).toBe(204);
    expect((await api(b.apiUrl, 'POST', '/v1/publish/room/1', { text: 'hi' })).status).toBe(204);
    expect(await client.next()).toEqual(['message', { topic: 'room.1' }, { text: 'hi' }]);
  });

  it('never misses a publish sent right after the subscription answered 204 (1,000 times)', async () => {
    const [a, b, c] = cluster.nodes;
    const { client, cid } = await c.helloAs('carol');
    for (let i = 0; i < 1000; i++) {
      const subscribed = await api(a.apiUrl, 'PUT', `/v1/connection/${cid}/subscriptions/race/${i}`);
      expect([i, subscribed.status]).toEqual([i, 204]);
      expect((await api(b.apiUrl, 'POST', `/v1/publish/race/${i}`, i)).status).toBe(204);
      expect(await client.next()).toEqual(['message', { topic: `race.${i}` }, i]);
    }
  }, 60_000);

  it('keeps per-topic order for publishes made through one node', async () => {
    const [a, b] = cluster.nodes;
    const { client, cid } = await a.helloAs('alice');
    await api(b.apiUrl, 'PUT', `/v1/connection/${cid}/subscriptions/t`);
    for (let i = 0; i < 50; i++) await api(b.apiUrl, 'POST', '/v1/publish/t', i);
    for (let i = 0; i < 50; i++) expect(await client.next()).toEqual(['message', { topic: 't' }, i]);
  });

  it('stops delivering after an unsubscribe made through another node', async () => {
    const [a, b, c] = cluster.nodes;
    const { client, cid } = await c.helloAs('carol');
    const statuses = [
      (await api(a.apiUrl, 'PUT', `/v1/connection/${cid}/subscriptions/gone`)).status,
      (await api(a.apiUrl, 'PUT', `/v1/connection/${cid}/subscriptions/barrier`)).status,
      (await api(b.apiUrl, 'DELETE', `/v1/connection/${cid}/subscriptions/gone`)).status,
      (await api(a.apiUrl, 'POST', '/v1/publish/gone', { text: 'not delivered' })).status,
      (await api(a.apiUrl, 'POST', '/v1/publish/barrier', { text: 'barrier' })).status,
    ];
    expect(statuses).toEqual([204, 204, 204, 204, 204]);
    expect(await client.next()).toEqual(['message', { topic: 'barrier' }, { text: 'barrier' }]);
  });

  it('delivers one publish to subscribers on every node, the publishing node included', async () => {
    const clients = await Promise.all(cluster.nodes.map((node, i) => node.helloAs(`user${i}`)));
    await Promise.all(
      clients.map(({ cid }, i) =>
        api(cluster.nodes[(i + 1) % 3].apiUrl, 'PUT', `/v1/connection/${cid}/subscriptions/all`),
      ),
    );
    expect((await api(cluster.nodes[0].apiUrl, 'POST', '/v1/publish/all', { n: 1 })).status).toBe(204);
    for (const { client } of clients) expect(await client.next()).toEqual(['message', { topic: 'all' }, { n: 1 }]);
  });

  it("carries a /v1/batch's commands for one owner node in one message (issue 12), each applied before the answer", async () => {
    const [a, b] = cluster.nodes;
    const { client, cid } = await a.helloAs('alice');
    const commands = Array.from({ length: 20 }, (_, i) => ({
      method: 'PUT',
      path: `/v1/connection/${cid}/subscriptions/batch/${i}`,
    }));
    const res = await api(b.apiUrl, 'POST', '/v1/batch', { commands });
    expect([res.status, res.json()]).toEqual([200, { results: commands.map(() => ({ status: 204 })) }]);
    expect(await (await fetch(b.apiUrl + '/metrics')).text()).toMatch(
      /^gateway_broker_messages_total\{direction="out",kind="command"\} 1$/m,
    );
    expect((await api(b.apiUrl, 'POST', '/v1/publish/batch/19', { last: true })).status).toBe(204);
    expect(await client.next()).toEqual(['message', { topic: 'batch.19' }, { last: true }]);
  });

  it('answers 204 for a connection id of a node that is not alive', async () => {
    const [a] = cluster.nodes;
    expect((await api(a.apiUrl, 'PUT', '/v1/connection/nodeZ-abcdefghijklmnopqrstuv/subscriptions/t')).status).toBe(
      204,
    );
  });
});
