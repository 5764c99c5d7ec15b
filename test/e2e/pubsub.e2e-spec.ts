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
