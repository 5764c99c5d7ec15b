import { watchdogAction } from './watchdog';

describe(watchdogAction.name, () => {
  const interval = 1000;

  it.each([
    ['traffic just now', 10_000, 10_000, null, true, 'none'],
    ['silent less than an interval', 10_999, 10_000, null, true, 'none'],
    ['silent one interval: probe', 11_000, 10_000, null, true, 'probe'],
    ['probe pending, silent 2 intervals', 12_000, 10_000, 11_000, true, 'none'],
    ['probe pending 2 intervals, silent 3: reconnect', 13_000, 10_000, 11_000, true, 'reconnect'],
    ['a late check after a long silence probes first (throttled timers)', 70_000, 10_000, null, true, 'probe'],
    ['the late probe is given 2 intervals', 71_500, 10_000, 70_000, true, 'none'],
    ['the late probe unanswered 2 intervals: reconnect', 72_000, 10_000, 70_000, true, 'reconnect'],
    [
      'the late probe answered (none pending, traffic half an interval ago): all quiet',
      70_500,
      70_000,
      null,
      true,
      'none',
    ],
    ['probing off: never probe', 12_500, 10_000, null, false, 'none'],
    ['probing off: reconnect after 3 silent intervals', 13_000, 10_000, null, false, 'reconnect'],
  ] as const)('%s', (_name, now, lastTrafficAt, probeSentAt, isProbing, action) => {
    expect(watchdogAction(now, lastTrafficAt, probeSentAt, interval, isProbing)).toBe(action);
  });
});
