import { TestGateway, startTestGateway } from './harness/gateway';
import { WsClient } from './harness/ws-client';

/**
 * Issue 11, defect 1 / SPEC §4.1 rule 4: a well-formed call nested deeper than
 * 128 levels (the frame array is level 1) gets a validation error echoing its
 * whole meta; it is not sent upstream and writes no error log, at any depth.
 */
describe('frames nested too deep (SPEC §4.1 rule 4)', () => {
  let t: TestGateway;
  let client: WsClient;
  beforeEach(async () => {
    t = await startTestGateway({ MAX_FRAME_BYTES: '4MiB' });
    ({ client } = await t.hello());
  });
  afterEach(() => t.close());

  const arrays = (n: number): string => '['.repeat(n) + ']'.repeat(n);
  const calls = (): string[] => t.upstream.requests.map((r) => r.path).filter((p) => !p.startsWith('/gateway/'));
  const errorLines = (): string[] =>
    t.logs.filter((line) => (JSON.parse(line) as { level?: string }).level === 'error');

  it('answers the issue frame (5,000 nested arrays in args) with "nested too deep" and the whole meta', async () => {
    client.send(`["echo",{"request_id":1,"trace":"t-1"},${arrays(5_000)},{}]`);
    expect(await client.next()).toEqual([
      'error',
      { request_id: 1, trace: 't-1', error_kind: 'validation_error' },
      'nested too deep',
    ]);
    expect(await client.call('echo', { request_id: 2 })).toEqual([
      'result',
      { request_id: 2 },
      { args: [], kwargs: {} },
    ]);
    expect(calls()).toEqual(['/echo']);
    expect(errorLines()).toEqual([]);
  });

  it.each([
    ['meta', (deep: string) => `["echo",{"request_id":3,"d":${deep}},[],{}]`],
    ['kwargs', (deep: string) => `["echo",{"request_id":3},[],{"d":${deep}}]`],
  ])('refuses deep nesting in %s at 129, 5,000 and 1,000,000 levels', async (where, frame) => {
    for (const levels of [129, 5_000, 1_000_000]) {
      const text = frame(arrays(levels - 2));
      client.send(text);
      const reply = await client.next(10_000);
      expect([reply[0], reply[1].request_id, reply[1].error_kind, reply[2]]).toEqual([
        'error',
        3,
        'validation_error',
        'nested too deep',
      ]);
      if (where === 'meta' && levels === 129) expect(JSON.stringify(reply[1].d)).toBe(arrays(127));
      client.frames.length = 0; // next() prints the frames seen so far with the recursive JSON.stringify
    }
    expect(calls()).toEqual([]);
    expect(errorLines()).toEqual([]);
  });

  it('sends a frame of exactly 128 levels upstream', async () => {
    const reply = await client.call('echo', { request_id: 4 }, JSON.parse(arrays(127)) as unknown[]);
    expect(reply[0]).toBe('result');
    expect(JSON.stringify((reply[2] as { args: unknown }).args)).toBe(arrays(127));
    expect(calls()).toEqual(['/echo']);
  });

  it('keeps the rule order: an invalid method with deep meta is "invalid method", echoed without overflow', async () => {
    client.send(`["gateway.x",{"request_id":5,"d":${arrays(20_000)}},[],{}]`);
    const reply = await client.next(5000);
    expect([reply[0], reply[1].request_id, reply[2]]).toEqual(['error', 5, 'invalid method']);
    expect(errorLines()).toEqual([]);
  });
});
