import { TestGateway, startTestGateway } from './harness/gateway';

describe('smoke', () => {
  let t: TestGateway;
  beforeEach(async () => (t = await startTestGateway()));
  afterEach(() => t.close());

  it('says hello and relays a call', async () => {
    const { client, hello } = await t.hello({ query: 'user=alice' });
    expect(hello).toEqual(['hello', {}, { user_id: 'alice' }]);
    const reply = await client.call('chat.echo', { request_id: 1 }, [1], { a: 2 });
    expect(reply).toEqual(['result', { request_id: 1 }, { args: [1], kwargs: { a: 2 } }]);
  });
});
