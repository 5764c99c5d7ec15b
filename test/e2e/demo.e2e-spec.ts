import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { TestGateway, startTestGateway } from './harness/gateway';
import { WsClient } from './harness/ws-client';

interface ChatBackendOptions {
  port?: number;
  host?: string;
  apiUrl: string | (() => string);
  apiToken?: string;
}

// The demo backend is plain JavaScript (examples/), loaded as `npm run demo` loads it.
const { startChatBackend } = require('../../examples/chat-backend') as { startChatBackend: (options: ChatBackendOptions) => Promise<Server> };

/** The demo's example backend end to end through the real gateway (issue 5, deliverable 6). */
describe('demo chat backend', () => {
  let t: TestGateway;
  let backend: Server;

  beforeEach(async () => {
    // The backend must know the gateway's internal URL, which exists only once the gateway runs.
    let apiUrl = '';
    backend = await startChatBackend({ port: 0, host: '127.0.0.1', apiUrl: () => apiUrl });
    t = await startTestGateway({ UPSTREAM_URL: `http://127.0.0.1:${(backend.address() as AddressInfo).port}` });
    apiUrl = t.apiUrl;
  });

  afterEach(async () => {
    await t.close();
    backend.closeAllConnections();
    await new Promise((resolve) => backend.close(resolve));
  });

  async function join(client: WsClient, requestId: number, user: string): Promise<void> {
    client.send(['chat.join', { request_id: requestId }, ['lobby'], {}]);
    // The backend subscribes the caller (snapshot frame) before it answers the call.
    expect(await client.next()).toEqual(['lattice', { namespace: 'rooms' }, { lobby: { last_message_counter: 0 } }]);
    expect([user, await client.next()]).toEqual([user, ['result', { request_id: requestId }, { joined: 'lobby' }]]);
  }

  it('greets ?user= connections and answers echo', async () => {
    const { client, hello } = await t.hello({ query: 'user=alice' });
    expect(hello).toEqual(['hello', {}, { user_id: 'alice', username: 'alice' }]);
    expect(await client.call('echo', { request_id: 1 }, ['hello'], { k: 1 })).toEqual(['result', { request_id: 1 }, { args: ['hello'], kwargs: { k: 1 } }]);
  });

  it('lets two users in one room see each other’s messages and the room counter', async () => {
    const { client: alice } = await t.hello({ query: 'user=alice' });
    const { client: bob } = await t.hello({ query: 'user=bob' });
    await join(alice, 1, 'alice');
    await join(bob, 1, 'bob');

    alice.send(['chat.send', { request_id: 2 }, ['lobby', 'hi'], {}]);
    for (const [name, client] of [['alice', alice], ['bob', bob]] as const) {
      expect([name, await client.next()]).toEqual([name, ['message', { topic: 'rooms.lobby' }, { user: 'alice', text: 'hi' }]]);
      expect([name, await client.next()]).toEqual([name, ['lattice', { namespace: 'rooms' }, { lobby: { last_message_counter: 1 } }]]);
    }
    expect(await alice.next()).toEqual(['result', { request_id: 2 }, { sent: 1 }]);

    bob.send(['chat.send', { request_id: 2 }, ['lobby', 'hey alice'], {}]);
    for (const [name, client] of [['alice', alice], ['bob', bob]] as const) {
      expect([name, await client.next()]).toEqual([name, ['message', { topic: 'rooms.lobby' }, { user: 'bob', text: 'hey alice' }]]);
      expect([name, await client.next()]).toEqual([name, ['lattice', { namespace: 'rooms' }, { lobby: { last_message_counter: 2 } }]]);
    }
    expect(await bob.next()).toEqual(['result', { request_id: 2 }, { sent: 2 }]);
  });

  it('refuses a connection without ?user= with fatal_error 401 and close 4401', async () => {
    const client = await t.connect();
    expect(await client.next()).toEqual(['fatal_error', { error_kind: 'http_error', http_error: 401 }, { error: 'add ?user=<name> to the URL' }]);
    expect((await client.closed()).code).toBe(4401);
  });
});
