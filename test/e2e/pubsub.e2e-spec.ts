import { TOPOLOGIES } from './harness/cluster';
import { TestGateway } from './harness/gateway';
import { api } from './harness/http';

describe.each(TOPOLOGIES)('pub/sub (%s)', (_, startTestGateway) => {
  let t: TestGateway;
  beforeEach(async () => (t = await startTestGateway()));
  afterEach(() => t.close());

  it('delivers a publish to a subscribed client with the dotted topic', async () => {
    const { client } = await t.hello();
    const cid = await t.connectionIdOf();
    expect((await api(t.apiUrl, 'PUT', `/v1/connection/${cid}/subscriptions/room/1`)).status).toBe(204);
    const res = await api(t.apiUrl, 'POST', '/v1/publish/room/1', { text: 'hi' });
    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    expect(await client.next()).toEqual(['message', { topic: 'room.1' }, { text: 'hi' }]);
  });

  it('buffers messages published before hello and sends them right after it', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    t.upstream.on('POST /gateway/authorize_connection', async () => {
      await gate;
      return { json: { user_id: 'u1' } };
    });
    const client = await t.connect();
    const cid = await t.connectionIdOf();
    await api(t.apiUrl, 'PUT', `/v1/connection/${cid}/subscriptions/t`);
    await api(t.apiUrl, 'POST', '/v1/publish/t', 1);
    await api(t.apiUrl, 'POST', '/v1/publish/t', 2);
    release();
    expect((await client.next())[0]).toBe('hello');
    expect(await client.next()).toEqual(['message', { topic: 't' }, 1]);
    expect(await client.next()).toEqual(['message', { topic: 't' }, 2]);
  });

  it('sends frames published in one tick (a batch) as separate WebSocket messages, in order, byte for byte', async () => {
    const { client, cid } = await t.helloAs('u1');
    expect((await api(t.apiUrl, 'PUT', `/v1/connection/${cid}/subscriptions/room/1`)).status).toBe(204);
    const raw: string[] = [];
    client.socket.on('message', (data: Buffer, isBinary: boolean) =>
      raw.push(`${isBinary ? 'binary' : 'text'} ${data}`),
    );
    // One batch starts its publishes in one go: the connection gets the five frames within one tick (issue 33).
    const commands = [1, 2, 3, 4, 5].map((seq) => ({ method: 'POST', path: '/v1/publish/room/1', body: { seq } }));
    expect((await api(t.apiUrl, 'POST', '/v1/batch', { commands })).status).toBe(200);
    for (const seq of [1, 2, 3, 4, 5]) expect(await client.next()).toEqual(['message', { topic: 'room.1' }, { seq }]);
    expect(raw).toEqual([1, 2, 3, 4, 5].map((seq) => `text ["message",{"topic":"room.1"},{"seq":${seq}}]`));
  });

  it('answers 404 with an empty body on unknown paths and methods', async () => {
    for (const [method, path] of [
      ['GET', '/v1/publish/a'],
      ['POST', '/v1/publish/a.b'],
      ['PUT', '/v1/connection/x/subscriptions/'],
      ['PUT', '/vvvv'],
    ]) {
      const res = await api(t.apiUrl, method, path, method === 'POST' ? {} : undefined);
      expect([method, path, res.status, res.text]).toEqual([method, path, 404, '']);
    }
  });
});
