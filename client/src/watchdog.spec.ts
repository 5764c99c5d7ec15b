import { watchdogAction } from './watchdog';

describe(watchdogAction.name, () => {
  const interval = 1000;

  it.each([
    ['traffic just now', 10_000, 10_000, null, true, 'none'],
    ['silent less than an interval', 10_999, 10_000, null, true, 'none'],
    ['silent one interval: probe', 11_000, 10_000, null, true, 'probe'],
    ['probed in this silence less than an interval ago', 11_500, 10_000, 11_000, true, 'none'],
    ['probed an interval ago, still silent: probe again', 12_000, 10_000, 11_000, true, 'probe'],
    ['a probe before the last traffic does not count', 11_000, 10_000, 9_500, true, 'probe'],
    ['silent 3 intervals: reconnect', 13_000, 10_000, 12_000, true, 'reconnect'],
    ['probing off: never probe', 12_500, 10_000, null, false, 'none'],
    ['probing off: still reconnect', 13_000, 10_000, null, false, 'reconnect'],
  ] as const)('%s', (_name, now, lastTrafficAt, lastProbeAt, isProbing, action) => {
    expect(watchdogAction(now, lastTrafficAt, lastProbeAt, interval, isProbing)).toBe(action);
  });
});
