import { primaryVerdict, PrimaryVerdict, ROLE_SILENT } from './primary-watch';

const PRIMARY_ROLE = ['master', 1234, [['127.0.0.1', '6380', '1234']]];
const REPLICA_ROLE = ['slave', '127.0.0.1', 6380, 'connected', 1234];

describe(primaryVerdict.name, () => {
  it.each<[string, unknown, string | null, string | null, PrimaryVerdict]>([
    ['both links on the primary', PRIMARY_ROLE, '127.0.0.1:6379', '127.0.0.1:6379', 'ok'],
    ['the subscriber not connected yet', PRIMARY_ROLE, '127.0.0.1:6379', null, 'unknown'],
    [
      'the command connection on a demoted primary',
      REPLICA_ROLE,
      '127.0.0.1:6379',
      '127.0.0.1:6380',
      'command-not-primary',
    ],
    ['a replica, both links on it', REPLICA_ROLE, '127.0.0.1:6379', '127.0.0.1:6379', 'command-not-primary'],
    ['an unreadable ROLE answer', 'OK', '127.0.0.1:6379', '127.0.0.1:6379', 'command-not-primary'],
    ['no ROLE answer in time', ROLE_SILENT, '127.0.0.1:6379', '127.0.0.1:6379', 'command-silent'],
    [
      'the subscriber left on another node that calls itself primary',
      PRIMARY_ROLE,
      '127.0.0.1:6380',
      '127.0.0.1:6379',
      'links-apart',
    ],
  ])('%s', (_, role, commandAt, subscriberAt, verdict) => {
    expect(primaryVerdict(role, commandAt, subscriberAt)).toBe(verdict);
  });
});
