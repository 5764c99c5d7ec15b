import { parseRedisUrl, SentinelOptions } from './redis-url';

describe(parseRedisUrl.name, () => {
  it.each([
    'redis://127.0.0.1:6379',
    'rediss://cache.test:6380',
    'redis://gw:s3cret@cache.test:6379/2',
    'REDIS://cache.test',
  ])('leaves the direct URL %j to ioredis, unchanged', (url) => {
    expect(parseRedisUrl(url)).toEqual({ target: { kind: 'direct', url }, problem: null });
  });

  const sentinelRows: Array<[string, SentinelOptions]> = [
    ['redis+sentinel://10.0.0.1:26379/mymaster', { sentinels: [{ host: '10.0.0.1', port: 26379 }], name: 'mymaster' }],
    [
      'redis+sentinel://s1.test:26379,s2.test:26380,[::1]:26381/prod',
      {
        sentinels: [
          { host: 's1.test', port: 26379 },
          { host: 's2.test', port: 26380 },
          { host: '::1', port: 26381 },
        ],
        name: 'prod',
      },
    ],
    [
      'redis+sentinel://s1.test,s2.test:5000/m',
      {
        sentinels: [
          { host: 's1.test', port: 26379 },
          { host: 's2.test', port: 5000 },
        ],
        name: 'm',
      },
    ],
    [
      'redis+sentinel://gw:p%40ss%2Fw0rd@s1.test:26379/m',
      { sentinels: [{ host: 's1.test', port: 26379 }], name: 'm', username: 'gw', password: 'p@ss/w0rd' },
    ],
    [
      'redis+sentinel://:only-pw@s1.test:26379/m',
      { sentinels: [{ host: 's1.test', port: 26379 }], name: 'm', password: 'only-pw' },
    ],
    [
      'redis+sentinel://u:p:w@s1.test/m',
      { sentinels: [{ host: 's1.test', port: 26379 }], name: 'm', username: 'u', password: 'p:w' },
    ],
    [
      'redis+sentinel://s1.test/m?sentinel_username=watch&sentinel_password=s%26nt',
      { sentinels: [{ host: 's1.test', port: 26379 }], name: 'm', sentinelUsername: 'watch', sentinelPassword: 's&nt' },
    ],
    [
      'rediss+sentinel://s1.test:26379/m',
      {
        sentinels: [{ host: 's1.test', port: 26379 }],
        name: 'm',
        tls: {},
        sentinelTLS: {},
        enableTLSForSentinelMode: true,
      },
    ],
    ['Redis+Sentinel://s1.test/m', { sentinels: [{ host: 's1.test', port: 26379 }], name: 'm' }],
  ];
  it.each(sentinelRows)('reads %j as ioredis Sentinel options', (url, options) => {
    expect(parseRedisUrl(url)).toEqual({ target: { kind: 'sentinel', options }, problem: null });
  });

  const clusterRows: Array<[string, object]> = [
    [
      'redis+cluster://10.0.0.1:7000,10.0.0.2',
      {
        seeds: [
          { host: '10.0.0.1', port: 7000 },
          { host: '10.0.0.2', port: 6379 },
        ],
      },
    ],
    [
      'rediss+cluster://gw:p%40ss@c1.test:7000',
      { seeds: [{ host: 'c1.test', port: 7000 }], username: 'gw', password: 'p@ss', tls: {} },
    ],
    ['redis+cluster://:secret@[::1]:7001', { seeds: [{ host: '::1', port: 7001 }], password: 'secret' }],
  ];
  it.each(clusterRows)('reads %j as Redis Cluster seeds (SPEC §13.5)', (url, options) => {
    expect(parseRedisUrl(url)).toEqual({ target: { kind: 'cluster', options }, problem: null });
  });

  const problemRows: Array<[string, string]> = [
    [
      'http://user:hunter2@cache.test',
      'the scheme must be redis://, rediss://, redis+sentinel://, rediss+sentinel://, redis+cluster:// or rediss+cluster://',
    ],
    [
      'redis+cluster://a:1/m',
      'redis+cluster:// URL: takes no path, query or fragment (a Redis Cluster has database 0 only); percent-encode "/", "?", "#" and "@" in user names and passwords',
    ],
    ['redis+cluster://', 'redis+cluster:// URL: no seed node (expected [user:password@]host:port[,host:port...])'],
    ['redis+cluster:a:1', 'redis+cluster:// URL: expected redis+cluster://[user:password@]host:port[,host:port...]'],
    [
      'redis+cluster://a:1,b:0',
      'redis+cluster:// URL: seed node "b:0" is not host:port (a host name or IP address, [IPv6], port 1 to 65535)',
    ],
    [
      'redis+cluster://a:1?db=1',
      'redis+cluster:// URL: takes no path, query or fragment (a Redis Cluster has database 0 only); percent-encode "/", "?", "#" and "@" in user names and passwords',
    ],
    [
      'cache.test:6379',
      'the scheme must be redis://, rediss://, redis+sentinel://, rediss+sentinel://, redis+cluster:// or rediss+cluster://',
    ],
    ['redis://[bad', 'is not a valid redis:// URL'],
    [
      'redis+sentinel:s1.test/m',
      'redis+sentinel:// URL: expected redis+sentinel://[user:password@]host:port[,host:port...]/<master-name>[?sentinel_username=...&sentinel_password=...]',
    ],
    [
      'redis+sentinel:///m',
      'redis+sentinel:// URL: no sentinel address (expected [user:password@]host:port[,host:port...]/<master-name>[?sentinel_username=...&sentinel_password=...])',
    ],
    [
      'redis+sentinel://s1.test:26379,s2.test:99999/m',
      'redis+sentinel:// URL: sentinel address "s2.test:99999" is not host:port (a host name or IP address, [IPv6], port 1 to 65535)',
    ],
    [
      'redis+sentinel://s1.test:26379,,s2.test/m',
      'redis+sentinel:// URL: sentinel address "" is not host:port (a host name or IP address, [IPv6], port 1 to 65535)',
    ],
    [
      'redis+sentinel://s1.test:port/m',
      'redis+sentinel:// URL: sentinel address "s1.test:port" is not host:port (a host name or IP address, [IPv6], port 1 to 65535)',
    ],
    [
      'redis+sentinel://s_1.test:1/m',
      'redis+sentinel:// URL: sentinel address "s_1.test:1" is not host:port (a host name or IP address, [IPv6], port 1 to 65535)',
    ],
    [
      'redis+sentinel://s1.test:26379',
      'redis+sentinel:// URL: no master name (expected .../<master-name> after the sentinel addresses)',
    ],
    [
      'redis+sentinel://s1.test:26379/',
      'redis+sentinel:// URL: no master name (expected .../<master-name> after the sentinel addresses)',
    ],
    [
      'redis+sentinel://s1.test:26379/m/0',
      'redis+sentinel:// URL: the master name must be one path segment of visible ASCII (at most 128 characters)',
    ],
    [
      'redis+sentinel://s1.test/m?sentinel_pasword=x',
      'redis+sentinel:// URL: unknown query parameter; did you mean sentinel_password? (allowed: sentinel_username, sentinel_password; percent-encode "&" and "=" in values)',
    ],
    [
      'redis+sentinel://s1.test/m?db=2',
      'redis+sentinel:// URL: unknown query parameter (allowed: sentinel_username, sentinel_password; percent-encode "&" and "=" in values)',
    ],
    [
      'redis+sentinel://s1.test/m?sentinel_password=a&sentinel_password=b',
      'redis+sentinel:// URL: query parameter sentinel_password is given twice',
    ],
    [
      'redis+sentinel://s1.test/m?sentinel_username=',
      'redis+sentinel:// URL: query parameter sentinel_username is empty',
    ],
    [
      'rediss+sentinel://s1.test/m#top',
      'rediss+sentinel:// URL: must not have a fragment ("#"); percent-encode "#" in passwords',
    ],
    ['redis+sentinel://u:p%zz@s1.test/m', 'redis+sentinel:// URL: the password has a malformed percent-encoding'],
  ];
  it.each(problemRows)('refuses %j: %s', (url, problem) => {
    expect(parseRedisUrl(url)).toEqual({ target: null, problem });
  });

  it.each([
    ['an unencoded "/" in the password', 'redis+sentinel://gw:top/secret@s1.test:26379/m'],
    ['an unencoded "?" in the password', 'redis+sentinel://gw:top?secret@s1.test:26379/m'],
    ['an unencoded "#" in the password', 'redis+sentinel://gw:top#secret@s1.test:26379/m'],
    ['an unencoded "&" in the sentinel password', 'redis+sentinel://s1.test/m?sentinel_password=top&secret'],
    ['a malformed sentinel password', 'redis+sentinel://s1.test/m?sentinel_password=top%secret'],
    ['a malformed host list after a password', 'redis+sentinel://gw:topsecret@s1.test:0/m'],
  ])('never repeats a secret, even with %s', (_, url) => {
    const { problem } = parseRedisUrl(url);
    expect(problem).not.toBeNull();
    expect(problem).not.toMatch(/top|secret|gw/);
  });
});
