import { redisErrorCause, redisUrlForLog } from './redis-address';
import { parseRedisUrl } from './redis-url';

const shown = (url: string): string => redisUrlForLog(url, parseRedisUrl(url).target!);

describe('redisUrlForLog', () => {
  it.each([
    ['redis://127.0.0.1:6390', 'redis://127.0.0.1:6390'],
    ['redis://redis.internal/2', 'redis://redis.internal/2'],
    ['rediss://gw:hunter2@redis.internal:6380/2', 'rediss://<redacted>@redis.internal:6380/2'],
    ['redis://:hunter2@[::1]:7000', 'redis://<redacted>@[::1]:7000'],
    ['redis://redis.internal:6379/0?password=hunter2', 'redis://redis.internal:6379/0?<redacted>'],
    ['redis+sentinel://s1.test,s2.test:26380/prod', 'redis+sentinel://s1.test:26379,s2.test:26380/prod'],
    [
      'rediss+sentinel://gw:hunter2@s1.test/prod?sentinel_password=pw2',
      'rediss+sentinel://<redacted>@s1.test:26379/prod?<redacted>',
    ],
  ])('%s is shown as %s', (url, expected) => {
    expect(shown(url)).toBe(expected);
  });
});

describe('redisErrorCause', () => {
  it('keeps a message that names its code, and adds the code to one that does not', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6390'), { code: 'ECONNREFUSED' });
    const other = Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
    expect([
      redisErrorCause(refused),
      redisErrorCause(other),
      redisErrorCause(new Error('NOAUTH Authentication required.')),
    ]).toEqual([
      'connect ECONNREFUSED 127.0.0.1:6390',
      'ECONNRESET: socket hang up',
      'NOAUTH Authentication required.',
    ]);
  });
});
