import { Logger } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { ClusterNames } from '../cluster/channels';
import { RedisLink } from '../cluster/redis-link';
import { SessionMovedError } from '../cluster/session-moved.error';
import { GatewayMetrics } from '../metrics/gateway-metrics';
import { SessionRecords, SessionSubscriptions } from './session-records';
import { tokenDigest } from './session-token';

/** Redis of the test run (`.ci/run` starts one on 6379 when none answers). */
const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A RedisLink that records the pipelines it is given (no Redis). */
function fakeLink(): { link: RedisLink; pipelines: Array<Array<[string, ...unknown[]]>> } {
  const pipelines: Array<Array<[string, ...unknown[]]>> = [];
  const pipeline = () => {
    const calls: Array<[string, ...unknown[]]> = [];
    pipelines.push(calls);
    return new Proxy(
      {},
      {
        get: (_, name: string) => (name === 'exec' ? () => Promise.resolve([]) : (...args: unknown[]) => void calls.push([name, ...args])),
      },
    );
  };
  const link = {
    isUp: true,
    command: { pipeline },
    script: () => () => Promise.resolve(null),
    onUp: () => undefined,
    timed: <T>(_: string, pending: Promise<T>) => pending,
  } as unknown as RedisLink;
  return { link, pipelines };
}

const subscriptions = (topics: string[], namespaces: string[], watch: string[] | null): SessionSubscriptions => ({
  topics: new Map(topics.map((topic) => [topic, [0, null] as const])),
  namespaces,
  watch,
});

describe(SessionRecords.name, () => {
  let records: SessionRecords;
  afterEach(() => records.stop());

  it('writes a session once per tick, then only what changed in its subscriptions', async () => {
    const { link, pipelines } = fakeLink();
    records = new SessionRecords(link, new ClusterNames('p:'), 'nodeA', 30_000, () => []);
    const start = { connectionId: 'nodeA-x', digest: 'D', userId: 'ann', authJson: '{"user_id":"ann"}', authorization: 'Gateway+json e30=', handlerName: 'default', windowEndAt: 0 };
    const first = records.started(start, subscriptions(['a/b'], ['ns'], null));
    const second = records.changed('nodeA-x', subscriptions(['a/b', 'c'], ['ns'], null));
    await Promise.all([first, second]);
    expect(pipelines).toHaveLength(1); // one flush for the tick
    const [write] = pipelines;
    expect(write[0][0]).toBe('gatewaySessionWriteStart');
    expect(write[0].slice(1, 4)).toEqual(['p:rs:nodeA-x', 'p:rt:D', 'p:rn:nodeA']);
    // [record, this node, window end, how many fields to set, field/value pairs, fields to delete]
    expect(write.slice(1)).toEqual([['gatewaySessionWriteChange', 'p:rs:nodeA-x', 'nodeA', '', 3, 't:a/b', '[0,null]', 't:c', '[0,null]', 'l:ns', '1', 'wu']]);

    await records.changed('nodeA-x', subscriptions(['c'], [], ['bob']));
    expect(pipelines[1]).toEqual([['gatewaySessionWriteChange', 'p:rs:nodeA-x', 'nodeA', '', 1, 'wu', '["bob"]', 't:a/b', 'l:ns']]);

    await records.detached('nodeA-x', 1234);
    expect(pipelines[2]).toEqual([['gatewaySessionWriteChange', 'p:rs:nodeA-x', 'nodeA', 1234, 0]]);
  });

  it('writes nothing for a session it no longer holds', async () => {
    const { link, pipelines } = fakeLink();
    records = new SessionRecords(link, new ClusterNames('p:'), 'nodeA', 30_000, () => []);
    records.forget('nodeA-y');
    await records.changed('nodeA-y', subscriptions(['t'], [], null));
    expect(pipelines.flat()).toEqual([]);
  });
});

describe('SessionRecords on Redis, a copy another node took over', () => {
  const links: RedisLink[] = [];
  const all: SessionRecords[] = [];
  beforeAll(() => Logger.overrideLogger(false)); // the links' "redis up" lines are not this spec's output
  afterEach(async () => {
    for (const records of all.splice(0)) records.stop();
    await Promise.all(links.splice(0).map((link) => link.close()));
  });

  async function nodeRecords(names: ClusterNames, nodeId: string): Promise<{ records: SessionRecords; link: RedisLink }> {
    const link = new RedisLink(REDIS_URL, new GatewayMetrics(), nodeId);
    if (!(await link.open(3000))) throw new Error(`no Redis at ${REDIS_URL}: start one (redis-server) to run this spec`);
    links.push(link);
    const records = new SessionRecords(link, names, nodeId, 30_000, () => []);
    all.push(records);
    return { records, link };
  }

  it('refuses its writes (subscriptions, window end) and names the holder; the record keeps what the holder has', async () => {
    const names = new ClusterNames(`test:${randomBytes(6).toString('hex')}:`);
    const a = await nodeRecords(names, 'nodeA');
    const b = await nodeRecords(names, 'nodeB');
    const token = 'token-one';
    const start = { connectionId: 'nodeA-x', digest: tokenDigest(token), userId: 'ann', authJson: '{"user_id":"ann"}', authorization: 'Gateway+json e30=', handlerName: 'default', windowEndAt: 0 };
    await a.records.started(start, subscriptions(['t1'], [], null));
    const taken = await b.records.takeOver(tokenDigest(token), 'default', tokenDigest('token-two'));
    expect(taken).toMatchObject({ ok: true, record: { connectionId: 'nodeA-x', previousHolder: 'nodeA', topics: new Map([['t1', [0, null]]]) } });

    await expect(a.records.changed('nodeA-x', subscriptions(['t1', 't2'], [], null))).rejects.toEqual(new SessionMovedError('nodeB'));
    // Forgotten: a later write for it is not even tried.
    await expect(a.records.detached('nodeA-x', Date.now() + 1000)).resolves.toBeUndefined();
    const fields = await a.link.command.hgetall(names.session('nodeA-x'));
    expect(fields).toMatchObject({ n: 'nodeB', w: '0', 't:t1': '[0,null]' });
    expect(fields['t:t2']).toBeUndefined();
  });

  it('writes nothing into a record that is gone (no key left without expiry)', async () => {
    const names = new ClusterNames(`test:${randomBytes(6).toString('hex')}:`);
    const a = await nodeRecords(names, 'nodeA');
    const start = { connectionId: 'nodeA-y', digest: tokenDigest('t'), userId: 'ann', authJson: '{}', authorization: 'x', handlerName: 'default', windowEndAt: 0 };
    await a.records.started(start, subscriptions([], [], null));
    await a.link.command.del(names.session('nodeA-y'));
    await a.records.changed('nodeA-y', subscriptions(['t1'], [], null));
    expect(await a.link.command.exists(names.session('nodeA-y'))).toBe(0);
  });
});

describe('SessionRecords on Redis: what a record holds', () => {
  const links: RedisLink[] = [];
  const all: SessionRecords[] = [];
  beforeAll(() => Logger.overrideLogger(false));
  afterEach(async () => {
    for (const records of all.splice(0)) records.stop();
    await Promise.all(links.splice(0).map((link) => link.close()));
  });

  it('stores the authorization answer once per record (issue 35: it held it twice)', async () => {
    const names = new ClusterNames(`test:${randomBytes(6).toString('hex')}:`);
    const link = new RedisLink(REDIS_URL, new GatewayMetrics(), 'nodeA');
    if (!(await link.open(3000))) throw new Error(`no Redis at ${REDIS_URL}: start one (redis-server) to run this spec`);
    links.push(link);
    const records = new SessionRecords(link, names, 'nodeA', 30_000, () => []);
    all.push(records);
    const answer = JSON.stringify({ user_id: 'ann', blob: 'x'.repeat(8 * 1024 - 40) });
    await records.started({ connectionId: 'nodeA-big', digest: tokenDigest('tb'), userId: 'ann', authJson: answer, handlerName: 'default', windowEndAt: 0 }, subscriptions([], [], null));
    const fields = await link.command.hgetall(names.session('nodeA-big'));
    const holding = Object.entries(fields).filter(([, value]) => value.length >= 4096).map(([field]) => field);
    expect(holding).toEqual(['a']);
    // Every field counted (the default samples 5 fields and extrapolates).
    const bytes = (await link.command.memory('USAGE', names.session('nodeA-big'), 'SAMPLES', 0)) as number;
    expect(bytes).toBeLessThan(12 * 1024);
  });
});
