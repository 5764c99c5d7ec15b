import { TestGateway, startTestGateway } from './harness/gateway';

/**
 * SPEC §1 PING_INTERVAL: the server pings; a connection silent for 3
 * intervals is dropped. "Silent" means nothing from the client: no frame and
 * no pong. A client heard from within the last interval needs no ping.
 */
const INTERVAL_MS = 200;
/** 1006: the client saw the TCP connection end without a closing handshake (terminate). */
const ABNORMAL = 1006;

describe('heartbeat (SPEC §1 PING_INTERVAL)', () => {
  let t: TestGateway;
  beforeEach(async () => (t = await startTestGateway({ PING_INTERVAL: `${INTERVAL_MS}ms` })));
  afterEach(() => t.close());

  it('pings a silent client, and keeps it while it answers', async () => {
    const { client } = await t.hello({ query: 'user=alice' });
    // 6 pings take at least 6 intervals: twice the drop limit.
    await client.untilPings(6, 20 * INTERVAL_MS);
    expect(client.socket.readyState).toBe(client.socket.OPEN);
    expect(await client.call('chat.echo', { request_id: 1 }, [1])).toEqual([
      'result',
      { request_id: 1 },
      { args: [1], kwargs: {} },
    ]);
  });

  it('drops a client that answers neither pings nor anything else after 3 intervals', async () => {
    const started = Date.now();
    const { client } = await t.hello({ query: 'user=alice', autoPong: false });
    const { code } = await client.closed(20 * INTERVAL_MS);
    expect(code).toBe(ABNORMAL);
    expect(client.pings).toBeGreaterThanOrEqual(2);
    expect(Date.now() - started).toBeGreaterThanOrEqual(3 * INTERVAL_MS);
    await t.untilOpenConnections(0);
  });

  it('keeps a client that sends frames even when it never answers a ping', async () => {
    const silent = (await t.hello({ query: 'user=bob', autoPong: false })).client;
    const { client: busy } = await t.hello({ query: 'user=alice', autoPong: false });
    let n = 0;
    const talk = setInterval(() => busy.send(['chat.echo', { request_id: ++n }, [], {}]), INTERVAL_MS / 4);
    try {
      await silent.closed(20 * INTERVAL_MS);
      expect(busy.socket.readyState).toBe(busy.socket.OPEN);
    } finally {
      clearInterval(talk);
    }
    // Heard from at every tick, the busy client was never pinged.
    expect(busy.pings).toBe(0);
    await t.untilOpenConnections(1);
  });

  it('drops a client that never finishes authorization once silent for 3 intervals', async () => {
    t.upstream.on('POST /gateway/authorize_connection', 'hang');
    const client = await t.connect({ query: 'user=alice', autoPong: false });
    const { code } = await client.closed(20 * INTERVAL_MS);
    expect(code).toBe(ABNORMAL);
  });
});
