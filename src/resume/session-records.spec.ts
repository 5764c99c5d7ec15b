import { ClusterNames } from '../cluster/channels';
import { RedisLink } from '../cluster/redis-link';
import { SessionRecords, SessionSubscriptions } from './session-records';

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
    expect(first).toBe(second); // one flush for the tick
    await first;
    expect(pipelines).toHaveLength(1);
    const [write] = pipelines;
    expect(write[0][0]).toBe('gatewaySessionWriteStart');
    expect(write[0].slice(1, 4)).toEqual(['p:rs:nodeA-x', 'p:rt:D', 'p:rn:nodeA']);
    expect(write.slice(1)).toEqual([
      ['hset', 'p:rs:nodeA-x', { 't:a/b': '[0,null]', 't:c': '[0,null]', 'l:ns': '1' }],
      ['hdel', 'p:rs:nodeA-x', 'wu'],
    ]);

    await records.changed('nodeA-x', subscriptions(['c'], [], ['bob']));
    expect(pipelines[1]).toEqual([
      ['hset', 'p:rs:nodeA-x', { wu: '["bob"]' }],
      ['hdel', 'p:rs:nodeA-x', 't:a/b', 'l:ns'],
    ]);

    await records.detached('nodeA-x', 1234);
    expect(pipelines[2]).toEqual([
      ['hset', 'p:rs:nodeA-x', 'w', 1234],
      ['pexpireat', 'p:rs:nodeA-x', 1234 + 60_000],
    ]);
  });

  it('writes nothing for a session it no longer holds', async () => {
    const { link, pipelines } = fakeLink();
    records = new SessionRecords(link, new ClusterNames('p:'), 'nodeA', 30_000, () => []);
    records.forget('nodeA-y');
    await records.changed('nodeA-y', subscriptions(['t'], [], null));
    expect(pipelines.flat()).toEqual([]);
  });
});
