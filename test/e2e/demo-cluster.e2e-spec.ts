import { WsClient } from './harness/ws-client';

interface Demo {
  pageUrl: string;
  gateways: Array<{ publicPort: number; internalPort: number }>;
  stop(): Promise<void>;
}
// The demo is plain JavaScript (examples/), loaded as `npm run demo -- --nodes 2` loads it; dist/ is built by the e2e globalSetup.
const { startDemo } = require('../../examples/demo') as {
  startDemo: (options: Record<string, unknown>) => Promise<Demo>;
};

/** Issue 10: `npm run demo -- --nodes 2` runs two Redis-backed nodes, and a chat between a client on each works. */
describe('demo on two nodes', () => {
  let demo: Demo;
  const clients: WsClient[] = [];
  beforeAll(async () => {
    demo = await startDemo({ nodes: 2, port: 0, apiPort: 0, backendPort: 0, onLine: () => undefined });
  }, 30_000);
  afterAll(async () => {
    await Promise.all(clients.map((client) => client.close()));
    await demo.stop();
  });

  /** Connect `user` to node `n` and join the lobby; resolves once its join call answered. */
  async function joinOn(n: number, user: string): Promise<WsClient> {
    const { client } = await WsClient.hello(`ws://127.0.0.1:${demo.gateways[n - 1].publicPort}`, {
      query: `user=${user}`,
    });
    clients.push(client);
    client.send(['chat.join', { request_id: 1 }, ['lobby'], {}]);
    for (;;) {
      const frame = await client.next(5000);
      if (frame[0] === 'result') return client;
    }
  }

  it('serves the page for each node and carries a message from a client on node 1 to one on node 2', async () => {
    const pages = await Promise.all([1, 2].map(async (n) => (await fetch(`${demo.pageUrl}?node=${n}`)).text()));
    pages.forEach((html, i) => expect(html).toContain(`content="${demo.gateways[i].publicPort}"`));
    const alice = await joinOn(1, 'alice');
    const bob = await joinOn(2, 'bob');
    alice.send(['chat.send', { request_id: 2 }, ['lobby', 'hi from node 1'], {}]);
    for (;;) {
      const frame = await bob.next(5000);
      if (frame[0] !== 'message') continue;
      expect(frame).toEqual([
        'message',
        { topic: 'rooms.lobby' },
        expect.objectContaining({ user: 'alice', text: 'hi from node 1' }),
      ]);
      break;
    }
  });
});
