import type { Socket } from 'node:net';
import { TestGateway, startTestGateway } from './harness/gateway';
import { api } from './harness/http';
import { within } from './harness/wait';

/** Most messages published before giving up: ~40 MiB, far beyond the loopback kernel buffers. */
const MAX_PUBLISHES = 4000;
const PAYLOAD = 'x'.repeat(10 * 1024);

/** SPEC §9: a connection whose unsent bytes exceed CLIENT_QUEUE_MAX_BYTES is closed 1008 slow_consumer. */
describe('slow consumer', () => {
  let t: TestGateway;
  beforeEach(async () => (t = await startTestGateway({ CLIENT_QUEUE_MAX_BYTES: '64KiB' })));
  afterEach(() => t.close());

  async function slowConsumerCloses(): Promise<number> {
    const text = await (await fetch(t.apiUrl + '/metrics')).text();
    const line = /^gateway_slow_consumer_closes_total (\S+)$/m.exec(text);
    if (line === null) throw new Error('gateway_slow_consumer_closes_total missing from /metrics');
    return Number(line[1]);
  }

  /** Publish 10 KiB messages in batches until the gateway closes a slow consumer; returns how many. */
  async function floodUntilSlowConsumerClose(): Promise<number> {
    let published = 0;
    while ((await slowConsumerCloses()) === 0) {
      if (published >= MAX_PUBLISHES) throw new Error(`no slow-consumer close after ${published} messages of 10 KiB`);
      for (const end = published + 50; published < end; published += 1) {
        expect((await api(t.apiUrl, 'POST', '/v1/publish/flood', { seq: published, pad: PAYLOAD })).status).toBe(204);
      }
    }
    return published;
  }

  it('closes a client that stops reading with 1008 slow_consumer while the others get every message', async () => {
    const slow = await t.helloAs('slow');
    const fast = await t.helloAs('fast');
    for (const { cid } of [slow, fast])
      expect((await api(t.apiUrl, 'PUT', `/v1/connection/${cid}/subscriptions/flood`)).status).toBe(204);
    expect(await slowConsumerCloses()).toBe(0);

    // The slow client stops reading: the kernel buffers fill, then the gateway's queue grows.
    const tcp = (slow.client.socket as unknown as { _socket: Socket })._socket;
    tcp.pause();

    let published = await floodUntilSlowConsumerClose();
    // Publishing goes on for the others after the close.
    for (const end = published + 20; published < end; published += 1) {
      expect((await api(t.apiUrl, 'POST', '/v1/publish/flood', { seq: published, pad: PAYLOAD })).status).toBe(204);
    }

    // Resume reading well within the 5 s handshake limit: the close frame is queued behind the pending frames.
    tcp.resume();
    expect(await slow.client.closed(6000)).toEqual({ code: 1008, reason: 'slow_consumer' });
    // What the slow client did get is an in-order prefix of the stream.
    const slowSeqs = slow.client.frames.slice(1).map(([type, meta, data]) => {
      expect([type, meta]).toEqual(['message', { topic: 'flood' }]);
      return (data as { seq: number }).seq;
    });
    expect(slowSeqs).toEqual(slowSeqs.map((_, i) => i));
    expect(slowSeqs.length).toBeLessThan(published);

    // The fast client got every message, in publish order (read through its queue, seq only: payloads are big).
    const fastSeqs: unknown[] = [];
    await within(
      (async () => {
        while (fastSeqs.length < published) {
          const [type, meta, data] = await fast.client.next(5000);
          fastSeqs.push(
            type === 'message' && (meta as { topic?: string }).topic === 'flood'
              ? (data as { seq: number }).seq
              : [type, meta],
          );
        }
      })(),
      `all ${published} messages at the fast client`,
      10000,
    );
    expect(fastSeqs).toEqual([...Array(published).keys()]);

    await t.untilOpenConnections(1, 6000);
    expect(await slowConsumerCloses()).toBe(1);
    expect((await api(t.apiUrl, 'POST', '/v1/publish/flood', { seq: published, pad: '' })).status).toBe(204);
    expect((await fast.client.next())[2]).toEqual({ seq: published, pad: '' });
  });

  it('closes a connection awaiting hello whose buffered messages exceed the limit, without a hello', async () => {
    t.upstream.on('POST /gateway/authorize_connection', 'hang');
    const client = await t.connect({ query: 'user=pending' });
    const cid = await t.connectionIdOf('user=pending');
    expect((await api(t.apiUrl, 'PUT', `/v1/connection/${cid}/subscriptions/flood`)).status).toBe(204);
    // Messages for a connection before its hello are kept for it: frames accepted and not
    // yet written, so CLIENT_QUEUE_MAX_BYTES (64 KiB here) bounds them too (SPEC §9).
    for (let seq = 0; seq < 8; seq++) {
      expect((await api(t.apiUrl, 'POST', '/v1/publish/flood', { seq, pad: PAYLOAD })).status).toBe(204);
    }
    expect(await client.closed()).toEqual({ code: 1008, reason: 'slow_consumer' });
    expect(client.frames).toEqual([]);
    expect(await slowConsumerCloses()).toBe(1);
    await t.untilOpenConnections(0);
  });
});
