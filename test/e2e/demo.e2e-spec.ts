import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { TestGateway, startTestGateway } from './harness/gateway';
import { WsClient } from './harness/ws-client';

type PageFiles = Record<string, { type: string; body: string }>;
interface ChatBackendOptions {
  port?: number;
  host?: string;
  apiUrl: string | (() => string);
  apiToken?: string;
  page?: PageFiles;
  gatewayPort?: number | (() => number);
  log?: (line: string) => void;
}

// The demo backend is plain JavaScript (examples/), loaded as `npm run demo` loads it.
const { startChatBackend } = require('../../examples/chat-backend') as {
  startChatBackend: (options: ChatBackendOptions) => Promise<Server>;
};
const { buildChatPage } = require('../../examples/chat-page/build') as { buildChatPage: () => Promise<PageFiles> };

/** The demo's example backend end to end through the real gateway (issue 5, deliverable 6). */
describe('demo chat backend', () => {
  let t: TestGateway;
  let backend: Server;
  let page: PageFiles;
  let backendLines: string[];
  beforeAll(async () => (page = await buildChatPage()));

  beforeEach(async () => {
    // The backend must know the gateway's internal URL, which exists only once the gateway runs.
    let apiUrl = '';
    backendLines = [];
    const log = (line: string): number => backendLines.push(line);
    backend = await startChatBackend({
      port: 0,
      host: '127.0.0.1',
      apiUrl: () => apiUrl,
      page,
      gatewayPort: () => t.gateway.publicAddress.port,
      log,
    });
    t = await startTestGateway({ UPSTREAM_URL: `http://127.0.0.1:${(backend.address() as AddressInfo).port}` });
    apiUrl = t.apiUrl;
  });

  afterEach(async () => {
    await t.close();
    backend.closeAllConnections();
    await new Promise((resolve) => backend.close(resolve));
  });

  const statusOf = (status: string) => ({ status_register: [expect.any(Number), status] });

  /** chat.join: the room lattice snapshot, the presence of the room's members, then the reply with the history. */
  async function join(
    client: WsClient,
    requestId: number,
    user: string,
    members: Record<string, string>,
    history: unknown[] = [],
  ): Promise<void> {
    client.send(['chat.join', { request_id: requestId }, ['lobby'], {}]);
    // The backend subscribes the caller (snapshot frames) before it answers the call.
    const seen = history.length;
    expect([user, await client.next()]).toEqual([
      user,
      ['lattice', { namespace: 'rooms' }, { lobby: { last_message_counter: seen, last_seen_counter: seen } }],
    ]);
    const presence = Object.fromEntries(Object.entries(members).map(([id, status]) => [id, statusOf(status)]));
    expect([user, await client.next()]).toEqual([user, ['lattice', { namespace: 'gateway.user' }, presence]]);
    expect([user, await client.next()]).toEqual([
      user,
      ['result', { request_id: requestId }, { joined: 'lobby', messages: history }],
    ]);
  }

  const message = (id: number, user: string, text: string) => ({ id, user, text, at: expect.any(Number) });

  it('greets ?user= connections and answers echo', async () => {
    const { client, hello } = await t.hello({ query: 'user=alice' });
    expect(hello).toEqual(['hello', {}, { user_id: 'alice', username: 'alice' }]);
    expect(await client.call('echo', { request_id: 1 }, ['hello'], { k: 1 })).toEqual([
      'result',
      { request_id: 1 },
      { args: ['hello'], kwargs: { k: 1 } },
    ]);
  });

  it('lets two users in one room see each other’s messages, presence and unread counters', async () => {
    const { client: alice } = await t.hello({ query: 'user=alice' });
    const { client: bob } = await t.hello({ query: 'user=bob' });
    await join(alice, 1, 'alice', { alice: 'active' });
    await join(bob, 1, 'bob', { alice: 'active', bob: 'active' });
    // Alice is told about the newcomer.
    expect(await alice.next()).toEqual(['lattice', { namespace: 'gateway.user' }, { bob: statusOf('active') }]);

    alice.send(['chat.send', { request_id: 2 }, ['lobby', 'hi'], {}]);
    for (const [name, client] of [
      ['alice', alice],
      ['bob', bob],
    ] as const) {
      expect([name, await client.next()]).toEqual([
        name,
        ['message', { topic: 'rooms.lobby' }, message(1, 'alice', 'hi')],
      ]);
    }
    // The sender has read its own message; bob has one unread (1 - 0).
    expect(await alice.next()).toEqual([
      'lattice',
      { namespace: 'rooms' },
      { lobby: { last_message_counter: 1, last_seen_counter: 1 } },
    ]);
    expect(await bob.next()).toEqual(['lattice', { namespace: 'rooms' }, { lobby: { last_message_counter: 1 } }]);
    expect(await alice.next()).toEqual(['result', { request_id: 2 }, { sent: 1 }]);

    expect(await bob.call('chat.read', { request_id: 2 }, ['lobby', 1])).toEqual([
      'lattice',
      { namespace: 'rooms' },
      { lobby: { last_seen_counter: 1 } },
    ]);
    expect(await bob.next()).toEqual(['result', { request_id: 2 }, { read: 1 }]);

    bob.send(['chat.send', { request_id: 3 }, ['lobby', 'hey alice'], {}]);
    for (const [name, client] of [
      ['alice', alice],
      ['bob', bob],
    ] as const) {
      expect([name, await client.next()]).toEqual([
        name,
        ['message', { topic: 'rooms.lobby' }, message(2, 'bob', 'hey alice')],
      ]);
    }
    expect(await alice.next()).toEqual(['lattice', { namespace: 'rooms' }, { lobby: { last_message_counter: 2 } }]);
    expect(await bob.next()).toEqual([
      'lattice',
      { namespace: 'rooms' },
      { lobby: { last_message_counter: 2, last_seen_counter: 2 } },
    ]);
    expect(await bob.next()).toEqual(['result', { request_id: 3 }, { sent: 2 }]);
  });

  it('gives a later member the history, already read', async () => {
    const { client: alice } = await t.hello({ query: 'user=alice' });
    await join(alice, 1, 'alice', { alice: 'active' });
    expect(await alice.call('chat.send', { request_id: 2 }, ['lobby', 'first'], {})).toEqual([
      'message',
      { topic: 'rooms.lobby' },
      message(1, 'alice', 'first'),
    ]);
    await alice.next(); // lattice
    await alice.next(); // result
    const { client: carol } = await t.hello({ query: 'user=carol' });
    await join(carol, 1, 'carol', { alice: 'active', carol: 'active' }, [message(1, 'alice', 'first')]);
  });

  it('subscribes a connection to the room of its ?room= in the authorization answer (SPEC §15.1), before any chat.join', async () => {
    const { client: dan } = await t.hello({ query: 'user=dan&room=lobby' });
    const { client: alice } = await t.hello({ query: 'user=alice' });
    await join(alice, 1, 'alice', { alice: 'active' });
    await alice.call('chat.send', { request_id: 2 }, ['lobby', 'hello dan'], {});
    expect(await dan.next()).toEqual(['message', { topic: 'rooms.lobby' }, message(1, 'alice', 'hello dan')]);
  });

  it("prints each connection's id as it authorizes it: the $CID a /v1 command names the connection by (README)", async () => {
    const { client } = await t.hello({ query: 'user=carol' });
    const line = backendLines.find((entry) => entry.startsWith('connection authorized: user carol, connection_id '));
    expect(line).toBeDefined();
    const printed = line!.split('connection_id ')[1];
    expect((await fetch(`${t.apiUrl}/v1/connection/${printed}/subscriptions/news`, { method: 'PUT' })).status).toBe(
      204,
    );
    expect(
      (
        await fetch(`${t.apiUrl}/v1/publish/news`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json' },
          body: '{"n":1}',
        })
      ).status,
    ).toBe(204);
    expect(await client.next()).toEqual(['message', { topic: 'news' }, { n: 1 }]);
  });

  it('serves the chat page with the gateway port filled in', async () => {
    const res = await fetch(`http://127.0.0.1:${(backend.address() as AddressInfo).port}/`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(await res.text()).toContain(`<meta name="gateway-port" content="${t.gateway.publicAddress.port}">`);
    const script = await fetch(`http://127.0.0.1:${(backend.address() as AddressInfo).port}/app.js`);
    expect([script.status, script.headers.get('content-type')]).toEqual([200, 'text/javascript; charset=utf-8']);
  });

  it('refuses a connection without ?user= with fatal_error 401 and close 4401', async () => {
    const client = await t.connect();
    expect(await client.next()).toEqual([
      'fatal_error',
      { error_kind: 'http_error', http_error: 401 },
      { error: 'add ?user=<name> to the URL' },
    ]);
    expect((await client.closed()).code).toBe(4401);
  });
});
