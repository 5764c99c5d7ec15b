import { TestGateway, startTestGateway } from './harness/gateway';
import { api } from './harness/http';
import { scrapeMetrics, untilMetric } from './harness/metrics';
import { WsClient } from './harness/ws-client';

const PRIVATE_BODY = {
  shared: { room: { title_register: [1, 'secret room'] } },
  private: { alice: { room: { unread_counter: 7 } } },
};

/**
 * SPEC §5: a well-formed but unknown conn_id, or one that closed a moment
 * before, gets 204 and nothing happens: no topic, namespace or lattice data is
 * created or kept, and nothing of it reaches a later connection of that user.
 */
describe('backend API commands for an unknown or just-closed connection (SPEC §5)', () => {
  let t: TestGateway;
  beforeEach(async () => (t = await startTestGateway({ NODE_ID: 'node1' })));
  afterEach(() => t.close());

  async function expect204(method: string, path: string, body?: unknown): Promise<void> {
    const res = await api(t.apiUrl, method, path, body);
    expect([res.status, res.text]).toEqual([204, '']);
  }

  async function gauges(): Promise<[number, number]> {
    const metrics = await scrapeMetrics(t.apiUrl);
    return [metrics.value('gateway_lattice_namespaces'), metrics.value('gateway_topics')];
  }

  /** A later connection of alice subscribes with no data of its own: it must see nothing. */
  async function expectAliceSeesNothing(): Promise<WsClient> {
    const { client, cid } = await t.helloAs('alice');
    await expect204('PUT', `/v1/connection/${cid}/lattices/chat`, {});
    expect(await client.next()).toEqual(['lattice', { namespace: 'chat' }, {}]);
    return client;
  }

  const UNKNOWN_IDS = [
    ['an id this node could have issued', () => 'node1-AAAAAAAAAAAAAAAAAAAAAA'],
    ['an id of another node', () => 'othernode-AAAAAAAAAAAAAAAAAAAAAA'],
    ['an id with no node', () => 'nonode'],
  ] as const;

  it.each(UNKNOWN_IDS)(
    'keeps no namespace and no private data for %s, even after 200 such subscribes',
    async (_what, id) => {
      for (let i = 0; i < 200; i++)
        await expect204('PUT', `/v1/connection/${id()}/lattices/chat${i === 0 ? '' : i}`, PRIVATE_BODY);
      await expect204('PUT', `/v1/connection/${id()}/subscriptions/news`);
      await expect204('PUT', `/v1/connection/${id()}/users`, ['alice']);
      expect(await gauges()).toEqual([0, 0]);
      await expectAliceSeesNothing();
    },
  );

  it('keeps nothing in a /v1/batch of subscribes for an unknown connection', async () => {
    const path = '/v1/connection/node1-AAAAAAAAAAAAAAAAAAAAAA';
    const res = await api(t.apiUrl, 'POST', '/v1/batch', {
      commands: [
        { method: 'PUT', path: `${path}/lattices/chat`, body: PRIVATE_BODY },
        { method: 'PUT', path: `${path}/subscriptions/news` },
      ],
    });
    expect(res.status).toBe(200);
    expect(await gauges()).toEqual([0, 0]);
    await expectAliceSeesNothing();
  });

  it('keeps nothing for a connection that closed just before, and shows none of it to her next connection', async () => {
    const { client, cid } = await t.helloAs('alice', 'user=alice&n=1');
    await client.close();
    await t.untilOpenConnections(0);
    await expect204('PUT', `/v1/connection/${cid}/lattices/chat`, PRIVATE_BODY);
    await expect204('PUT', `/v1/connection/${cid}/subscriptions/news`);
    expect(await gauges()).toEqual([0, 0]);
    await expectAliceSeesNothing();
  });

  it('keeps nothing whichever comes first when the close and the subscribe race', async () => {
    for (let round = 0; round < 10; round++) {
      const { client, cid } = await t.helloAs('alice', `user=alice&round=${round}`);
      const subscribed = expect204('PUT', `/v1/connection/${cid}/lattices/chat`, PRIVATE_BODY);
      client.socket.close();
      await subscribed;
      await client.closed();
      await t.untilOpenConnections(0);
      await untilMetric(t.apiUrl, 'gateway_lattice_namespaces', (n) => n === 0);
    }
    await expectAliceSeesNothing();
  });
});
