import type { GatewayClient } from '../../client/src';
import { TestGateway, startTestGateway } from './harness/gateway';
import { api } from './harness/http';
import { untilMetric } from './harness/metrics';
import { resumeProtocols } from './harness/resume';
import { SdkClients, WireLog, collectMessages, nextEvent } from './harness/sdk-client';
import { TcpProxy } from './harness/tcp-proxy';
import { PROTOCOL } from './harness/ws-client';
import { expectPut, expectPublish } from './harness/v1';

/**
 * The client SDK's side of SPEC §12 (12.7) against the real single-node
 * gateway: resume after a network blip (cut by a TCP proxy between the SDK
 * and the gateway), a new session after the window, 1012 on a drain, 4409 and
 * 4403 stop it, `resume: false` speaks the legacy protocol.
 */
const AUTH = '/gateway/authorize_connection';
const BOTH_PROTOCOLS = [PROTOCOL, 'v1.swindon-lattice+json'];

describe('client SDK: resumable sessions (SPEC §12.7, one node)', () => {
  const sdk = new SdkClients();
  let t: TestGateway;
  let proxy: TcpProxy;
  /** Where the proxy sends the next connections. */
  let targetPort = 0;
  const stops: Array<() => Promise<unknown>> = [];

  afterEach(async () => {
    sdk.closeAll();
    await proxy?.close();
    for (const stop of stops.splice(0).reverse()) await stop();
  });

  async function start(env: Record<string, string> = {}): Promise<void> {
    t = await startTestGateway(env);
    stops.push(() => t.close());
    targetPort = t.gateway.publicAddress.port;
    proxy = await TcpProxy.start(() => [targetPort]);
  }

  function authRequests(gateway = t): number {
    return gateway.upstream.requests.filter((r) => r.path === AUTH).length;
  }

  async function untilDetached(count: number, ms?: number): Promise<void> {
    await untilMetric(t.apiUrl, 'gateway_sessions_detached', (v) => v === count, ms);
  }

  /** Counts of the client's session events from now on. */
  function sessionEvents(client: GatewayClient): { resumed: unknown[]; reconnected: unknown[] } {
    const seen = { resumed: [] as unknown[], reconnected: [] as unknown[] };
    client.on('resumed', (info) => seen.resumed.push(info));
    client.on('reconnected', (hello) => seen.reconnected.push(hello));
    return seen;
  }

  /** An SDK client through the proxy, connected; its connection id. */
  async function connected(
    user: string,
    options: Parameters<SdkClients['create']>[1] = {},
  ): Promise<{ client: GatewayClient; cid: string }> {
    const client = sdk.create(`ws://127.0.0.1:${proxy.port}/?user=${user}`, options);
    await client.connect();
    return { client, cid: await t.connectionIdOf(`user=${user}`) };
  }

  it('a network blip resumes the session: same connection id, no authorization, missed messages once and in order', async () => {
    await start();
    const wire = new WireLog();
    const { client, cid } = await connected('alice', { WebSocket: wire.WebSocket });
    const events = sessionEvents(client);
    const lobby = collectMessages(client, 'room.lobby');
    await expectPut(t.apiUrl, `/v1/connection/${cid}/subscriptions/room/lobby`);
    await expectPublish(t.apiUrl, 'room/lobby', 1);
    await expectPublish(t.apiUrl, 'room/lobby', 2);
    await lobby.until(2);
    const auths = authRequests();

    const lost = nextEvent(client, 'disconnect');
    const resumed = nextEvent(client, 'resumed');
    proxy.block();
    expect((await lost)[0]).toMatchObject({ code: 1006, fatal: null });
    expect(client.status).toBe('reconnecting');
    await untilDetached(1);
    for (const n of [3, 4, 5]) await expectPublish(t.apiUrl, 'room/lobby', n);
    proxy.unblock();
    expect(await resumed).toEqual([{ lost: [], replayed: 3 }]);
    await lobby.until(5);
    await expectPublish(t.apiUrl, 'room/lobby', 6);
    await lobby.until(6);
    expect(lobby.seen).toEqual([1, 2, 3, 4, 5, 6]);
    expect(authRequests()).toBe(auths);
    expect(events.reconnected).toEqual([]);

    // The resume offer: the first hello's token and the position of the last message received.
    const first = wire.helloOf(0);
    const epoch = (wire.sockets[0].frames[1] as [string, { epoch: string }])[1].epoch;
    const last = wire.sockets[wire.sockets.length - 1];
    expect(last.protocols.slice(0, 2)).toEqual(BOTH_PROTOCOLS);
    expect(
      JSON.parse(Buffer.from(last.protocols[2].replace(/^gateway-resume\./, ''), 'base64url').toString('utf8')),
    ).toEqual({
      token: (first[1].resume as { token: string }).token,
      count_replayed: true,
      positions: { 'room.lobby': [2, epoch] },
    });
    expect(wire.sockets[0].protocols).toEqual([...BOTH_PROTOCOLS, 'gateway-resume']);

    // The same connection id: the backend's commands for it reach the resumed client.
    const news = collectMessages(client, 'news');
    await expectPut(t.apiUrl, `/v1/connection/${cid}/subscriptions/news`);
    await expectPublish(t.apiUrl, 'news', 'by-cid');
    await news.until(1);
    expect(news.seen).toEqual(['by-cid']);
  });

  it('resumes again and again, each time with the latest token, and says which topics were lost', async () => {
    await start({ TOPIC_HISTORY_SIZE: '2' });
    const { client, cid } = await connected('alice');
    const events = sessionEvents(client);
    const a = collectMessages(client, 'a');
    const b = collectMessages(client, 'b');
    await expectPut(t.apiUrl, `/v1/connection/${cid}/subscriptions/a`);
    await expectPut(t.apiUrl, `/v1/connection/${cid}/subscriptions/b`);
    await expectPublish(t.apiUrl, 'a', 'a1');
    await a.until(1);
    for (let round = 1; round <= 3; round++) {
      const resumed = nextEvent(client, 'resumed');
      proxy.block();
      await untilDetached(1);
      await expectPublish(t.apiUrl, 'b', `b${round}`);
      if (round === 3) for (const n of [2, 3, 4]) await expectPublish(t.apiUrl, 'a', `a${n}`); // a2 is out of the history: lost
      proxy.unblock();
      expect(await resumed).toEqual([{ lost: round === 3 ? ['a'] : [], replayed: 1 }]); // b's message; a lost replays nothing
      await b.until(round);
    }
    expect([a.seen, b.seen]).toEqual([['a1'], ['b1', 'b2', 'b3']]);
    await expectPublish(t.apiUrl, 'a', 'a5');
    await a.until(2);
    expect(a.seen).toEqual(['a1', 'a5']);
    expect(events.reconnected).toEqual([]);
  });

  it('keeps its offer within 8 KiB: the least recent topics go without a position, and their replay delivers nothing twice', async () => {
    await start();
    const wire = new WireLog();
    const { client, cid } = await connected('alice', { WebSocket: wire.WebSocket });
    const topics = Array.from(
      { length: 150 },
      (_, i) => `room.with-a-rather-long-name-so-positions-fill-the-offer-${String(i).padStart(3, '0')}`,
    );
    const seen: string[] = [];
    for (const topic of topics) client.onMessage(topic, (data) => seen.push(`${topic}:${String(data)}`));
    const all = collectMessages(client, topics[topics.length - 1]);
    for (const topic of topics)
      await expectPut(t.apiUrl, `/v1/connection/${cid}/subscriptions/${topic.replaceAll('.', '/')}`);
    for (const topic of topics) await expectPublish(t.apiUrl, topic.replaceAll('.', '/'), 'first');
    await all.until(1);
    expect(seen).toHaveLength(topics.length);

    const resumed = nextEvent(client, 'resumed');
    proxy.block();
    await untilDetached(1);
    await expectPublish(t.apiUrl, topics[0].replaceAll('.', '/'), 'second'); // the least recent topic: no position in the offer
    await expectPublish(t.apiUrl, topics[topics.length - 1].replaceAll('.', '/'), 'second');
    proxy.unblock();
    const [info] = await resumed;
    await all.until(2);
    const offer = wire.sockets[wire.sockets.length - 1].protocols[2].replace(/^gateway-resume\./, '');
    const offered = Object.keys(
      (JSON.parse(Buffer.from(offer, 'base64url').toString('utf8')) as { positions: object }).positions,
    );
    // The gateway replays each topic left out from where the session subscribed ('first', and topics[0]'s 'second'),
    // and the last topic's 'second'; the client drops the 'first's it had delivered.
    expect(info).toEqual({ lost: [], replayed: topics.length - offered.length + 2 });
    expect(offer.length).toBeLessThanOrEqual(8192);
    expect(offer.length).toBeGreaterThan(8000);
    expect(offered).toEqual(topics.slice(topics.length - offered.length).reverse()); // the most recent topics
    expect(offered).not.toContain(topics[0]);
    // A barrier: a message published now comes after every replayed one.
    await expectPublish(t.apiUrl, topics[topics.length - 1].replaceAll('.', '/'), 'third');
    await all.until(3);
    expect(seen.slice(topics.length)).toEqual([
      `${topics[0]}:second`,
      `${topics[topics.length - 1]}:second`,
      `${topics[topics.length - 1]}:third`,
    ]);
  });

  it('after the window a new session starts: reconnected, a new authorization and connection id, nothing of the old session', async () => {
    await start({ RESUME_WINDOW: '300ms' });
    const { client, cid } = await connected('alice');
    const events = sessionEvents(client);
    const lobby = collectMessages(client, 'lobby');
    await expectPut(t.apiUrl, `/v1/connection/${cid}/subscriptions/lobby`);
    const auths = authRequests();
    const reconnected = nextEvent(client, 'reconnected');
    proxy.block();
    await untilDetached(1);
    await untilDetached(0, 3000);
    await expectPublish(t.apiUrl, 'lobby', 'while-away');
    proxy.unblock();
    expect(await reconnected).toEqual([{ user_id: 'alice' }]);
    expect(authRequests()).toBe(auths + 1);
    const newCid = await t.connectionIdOf('user=alice');
    expect(newCid).not.toBe(cid);
    expect(events.resumed).toEqual([]);
    // The app subscribes again (here: the backend does); only what comes now is delivered.
    await expectPut(t.apiUrl, `/v1/connection/${newCid}/subscriptions/lobby`);
    await expectPublish(t.apiUrl, 'lobby', 'live');
    await lobby.until(1);
    expect(lobby.seen).toEqual(['live']);
  });

  it('a drain (1012 service_restart) reconnects at once with jitter, not backoff; on one node the session is gone: reconnected', async () => {
    await start();
    const next = await startTestGateway();
    stops.push(() => next.close());
    // A backoff delay would be 30 s here (half of 60 s); 1012 waits the jitter alone: half of 1 s.
    const { client } = await connected('alice', { backoff: { baseMs: 60_000, capMs: 60_000 }, random: () => 0.5 });
    const events = sessionEvents(client);
    targetPort = next.gateway.publicAddress.port;
    const disconnect = nextEvent(client, 'disconnect');
    const reconnected = nextEvent(client, 'reconnected', 5000);
    stops.splice(0, 1); // the first gateway: drained here
    await t.upstream.close();
    await t.gateway.close();
    expect(await disconnect).toEqual([{ code: 1012, reason: 'service_restart', fatal: null, retryInMs: 500 }]);
    await reconnected;
    expect(authRequests(next)).toBe(1);
    expect(events.resumed).toEqual([]);
  });

  it('stops on 4409: another socket resumed the session with its token', async () => {
    await start();
    const wire = new WireLog();
    const { client } = await connected('alice', { WebSocket: wire.WebSocket });
    const disconnect = nextEvent(client, 'disconnect');
    const token = (wire.helloOf(0)[1].resume as { token: string }).token;
    const { hello } = await t.hello({ query: 'user=mallory', protocols: resumeProtocols(token) });
    expect(hello[1]).toMatchObject({ resumed: true });
    expect(await disconnect).toEqual([{ code: 4409, reason: 'session_resumed', fatal: null, retryInMs: null }]);
    expect(client.status).toBe('closed');
    expect(wire.sockets).toHaveLength(1);
  });

  it('stops on 4403 disconnected: the backend ended the session', async () => {
    await start();
    const { client, cid } = await connected('alice');
    const disconnect = nextEvent(client, 'disconnect');
    expect((await api(t.apiUrl, 'DELETE', `/v1/connection/${cid}`)).status).toBe(204);
    expect(await disconnect).toEqual([{ code: 4403, reason: 'disconnected', fatal: null, retryInMs: null }]);
    expect(client.status).toBe('closed');
    // The app may connect again: a new session.
    const reconnected = nextEvent(client, 'reconnected');
    await client.connect();
    await reconnected;
  });

  it('resume: false offers the lattice protocols alone; hello meta {}, message frames without positions; a blip means reconnected', async () => {
    await start();
    const wire = new WireLog();
    const { client, cid } = await connected('alice', { WebSocket: wire.WebSocket, resume: false });
    const events = sessionEvents(client);
    const lobby = collectMessages(client, 'lobby');
    expect(wire.sockets[0].protocols).toEqual(BOTH_PROTOCOLS);
    expect(wire.helloOf(0)).toEqual(['hello', {}, { user_id: 'alice' }]);
    await expectPut(t.apiUrl, `/v1/connection/${cid}/subscriptions/lobby`);
    await expectPublish(t.apiUrl, 'lobby', 1);
    await lobby.until(1);
    expect(wire.sockets[0].frames[1]).toEqual(['message', { topic: 'lobby' }, 1]);

    const lost = nextEvent(client, 'disconnect');
    const reconnected = nextEvent(client, 'reconnected');
    proxy.block();
    await lost;
    proxy.unblock();
    await reconnected;
    expect(wire.sockets[wire.sockets.length - 1].protocols).toEqual(BOTH_PROTOCOLS);
    expect(events.resumed).toEqual([]);
  });
});
