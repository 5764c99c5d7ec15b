import { redisAddressOf, redisErrorCause } from './redis-address';
import { parseRedisUrl } from './redis-url';

const addressOf = (url: string): string => redisAddressOf(parseRedisUrl(url).target!);

describe('redisAddressOf', () => {
  it.each([
    ['redis://127.0.0.1:6390', '127.0.0.1:6390'],
    ['redis://redis.internal', 'redis.internal:6379'],
    ['rediss://gw:hunter2@redis.internal:6380/2', 'redis.internal:6380'],
    ['redis://[::1]:7000', '[::1]:7000'],
    [
      'redis+sentinel://gw:hunter2@s1.test,s2.test:26380/prod?sentinel_password=pw2',
      'sentinel prod at s1.test:26379,s2.test:26380',
    ],
  ])('%s is %s, without credentials', (url, address) => {
    expect(addressOf(url)).toBe(address);
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
