import type { Destination, GatewayConfig } from './gateway-config';
import { ConfigError, loadConfig, loadConfigWithWarnings } from './load-config';
import { BASE, EXAMPLE_YAML, Env, destination, problemsOf } from './load-config.fixtures';

interface EnvRow {
  key: string;
  read: (config: GatewayConfig) => unknown;
  byDefault: unknown;
  valid: string;
  parsed: unknown;
  invalid: string;
  message: string;
}

/** SPEC §1, one row per variable (UPSTREAM_URL and GATEWAY_CONFIG also have their own tests below). */
const ENV_ROWS: EnvRow[] = [
  {
    key: 'UPSTREAM_URL',
    read: (c) => destination(c).url,
    byDefault: 'http://upstream.test:8000',
    valid: 'https://api.test/v1/',
    parsed: 'https://api.test/v1',
    invalid: 'ftp://api.test',
    message: 'UPSTREAM_URL: "ftp://api.test" is not an http or https URL',
  },
  {
    key: 'WS_PATH',
    read: (c) => c.handlers[0].path,
    byDefault: '/',
    valid: '/ws',
    parsed: '/ws',
    invalid: 'ws',
    message: 'WS_PATH: must start with "/"',
  },
  {
    key: 'UPSTREAM_TIMEOUT',
    read: (c) => destination(c).timeoutMs,
    byDefault: 30_000,
    valid: '90 minutes',
    parsed: 5_400_000,
    invalid: '3 parsecs',
    message: 'UPSTREAM_TIMEOUT: "3 parsecs" is not a duration (examples: "30s", "2m")',
  },
  {
    key: 'UPSTREAM_MAX_SOCKETS',
    read: (c) => destination(c).maxSockets,
    byDefault: 100,
    valid: '8',
    parsed: 8,
    invalid: '0',
    message: 'UPSTREAM_MAX_SOCKETS: "0" is not a whole number >= 1',
  },
  {
    key: 'UPSTREAM_QUEUE_LIMIT',
    read: (c) => destination(c).queueLimit,
    byDefault: 100_000,
    valid: '0',
    parsed: 0,
    invalid: '-1',
    message: 'UPSTREAM_QUEUE_LIMIT: "-1" is not a whole number >= 0',
  },
  {
    key: 'REQUEST_ID_HEADER',
    read: (c) => destination(c).requestIdHeader,
    byDefault: null,
    valid: 'X-Request-Id',
    parsed: 'X-Request-Id',
    invalid: 'X Request',
    message: 'REQUEST_ID_HEADER: "X Request" is not a valid HTTP header name',
  },
  {
    key: 'MAX_CONNECTIONS',
    read: (c) => c.limits.maxConnections,
    byDefault: 100_000,
    valid: '10',
    parsed: 10,
    invalid: '1.5',
    message: 'MAX_CONNECTIONS: "1.5" is not a whole number >= 1',
  },
  {
    key: 'MAX_FRAME_BYTES',
    read: (c) => c.limits.maxFrameBytes,
    byDefault: 1_048_576,
    valid: '512KiB',
    parsed: 524_288,
    invalid: '1.5MiB',
    message: 'MAX_FRAME_BYTES: "1.5MiB" is not a byte size (examples: "1048576", "512KiB", "10MiB")',
  },
  {
    key: 'MAX_PAYLOAD_BYTES',
    read: (c) => c.limits.maxPayloadBytes,
    byDefault: 10_485_760,
    valid: '10MB',
    parsed: 10_000_000,
    invalid: '0',
    message: 'MAX_PAYLOAD_BYTES: "0" must be at least 1 byte',
  },
  {
    key: 'CLIENT_MAX_PENDING_CALLS',
    read: (c) => c.limits.clientMaxPendingCalls,
    byDefault: 100,
    valid: '5',
    parsed: 5,
    invalid: '0',
    message: 'CLIENT_MAX_PENDING_CALLS: "0" is not a whole number >= 1',
  },
  {
    key: 'BATCH_MAX_COMMANDS',
    read: (c) => c.limits.batchMaxCommands,
    byDefault: 1000,
    valid: '100',
    parsed: 100,
    invalid: '0',
    message: 'BATCH_MAX_COMMANDS: "0" is not a whole number >= 1',
  },
  {
    key: 'CLIENT_QUEUE_MAX_BYTES',
    read: (c) => c.limits.clientQueueMaxBytes,
    byDefault: 4_194_304,
    valid: '1048576',
    parsed: 1_048_576,
    invalid: '4 MiBs',
    message: 'CLIENT_QUEUE_MAX_BYTES: "4 MiBs" is not a byte size (examples: "1048576", "512KiB", "10MiB")',
  },
  {
    key: 'NEW_CONNECTION_IDLE_TIMEOUT',
    read: (c) => c.activity.newConnectionIdleTimeoutMs,
    byDefault: 60_000,
    valid: '200ms',
    parsed: 200,
    invalid: '-1s',
    message: 'NEW_CONNECTION_IDLE_TIMEOUT: "-1s" is not a duration (examples: "30s", "2m")',
  },
  {
    key: 'CLIENT_MIN_IDLE_TIMEOUT',
    read: (c) => c.activity.clientMinIdleTimeoutMs,
    byDefault: 1_000,
    valid: '500ms',
    parsed: 500,
    invalid: '0s',
    message: 'CLIENT_MIN_IDLE_TIMEOUT: "0s" must be longer than 0',
  },
  {
    key: 'CLIENT_MAX_IDLE_TIMEOUT',
    read: (c) => c.activity.clientMaxIdleTimeoutMs,
    byDefault: 7_200_000,
    valid: '3h',
    parsed: 10_800_000,
    invalid: '30d',
    message: 'CLIENT_MAX_IDLE_TIMEOUT: "30d" is too long (at most 24d)',
  },
  {
    key: 'SESSION_INACTIVE_NOTIFY',
    read: (c) => c.activity.shouldNotifyInactive,
    byDefault: true,
    valid: 'no',
    parsed: false,
    invalid: 'maybe',
    message: 'SESSION_INACTIVE_NOTIFY: "maybe" is not a boolean (allowed: true, false, 1, 0, yes, no)',
  },
  {
    key: 'ALLOWED_ORIGINS',
    read: (c) => c.allowedOrigins,
    byDefault: null,
    valid: ' https://a.test, ,http://b.test:8080 ',
    parsed: new Set(['https://a.test', 'http://b.test:8080']),
    invalid: 'https://a.test/',
    message:
      'ALLOWED_ORIGINS: "https://a.test/" is not an origin (form: "https://host[:port]", no path or trailing slash; or "*" for any)',
  },
  {
    key: 'PING_INTERVAL',
    read: (c) => c.pingIntervalMs,
    byDefault: 10_000,
    valid: '2m',
    parsed: 120_000,
    invalid: '10',
    message: 'PING_INTERVAL: "10" is not a duration (examples: "30s", "2m")',
  },
  {
    key: 'SHUTDOWN_GRACE',
    read: (c) => c.shutdownGraceMs,
    byDefault: 10_000,
    valid: '0s',
    parsed: 0,
    invalid: 'soon',
    message: 'SHUTDOWN_GRACE: "soon" is not a duration (examples: "30s", "2m")',
  },
  {
    key: 'REDIS_URL',
    read: (c) => c.redisUrl,
    byDefault: null,
    valid: 'rediss://cache.test:6380',
    parsed: 'rediss://cache.test:6380',
    invalid: 'http://user:hunter2@cache.test',
    message:
      'REDIS_URL: the scheme must be redis://, rediss://, redis+sentinel://, rediss+sentinel://, redis+cluster:// or rediss+cluster://',
  },
  {
    key: 'REDIS_PREFIX',
    read: (c) => c.redisPrefix,
    byDefault: 'gateway:',
    valid: 'acme:chat.1-',
    parsed: 'acme:chat.1-',
    invalid: 'a{b}',
    message: 'REDIS_PREFIX: "a{b}" is not a Redis prefix (1 to 64 of A-Z, a-z, 0-9, ":", "_", ".", "-")',
  },
  {
    key: 'LATTICE_RETENTION',
    read: (c) => c.latticeRetentionMs,
    byDefault: 86_400_000,
    valid: '90 minutes',
    parsed: 5_400_000,
    invalid: 'forever',
    message: 'LATTICE_RETENTION: "forever" is not a duration (examples: "30s", "2m")',
  },
  {
    key: 'RESUME_WINDOW',
    read: (c) => c.resume.windowMs,
    byDefault: 30_000,
    valid: '0',
    parsed: 0,
    invalid: 'a while',
    message: 'RESUME_WINDOW: "a while" is not a duration (examples: "30s", "2m")',
  },
  {
    key: 'AUTHORIZATION_TTL',
    read: (c) => c.authLifetime.defaultTtlMs,
    byDefault: 0,
    valid: '15m',
    parsed: 900_000,
    invalid: 'an hour',
    message: 'AUTHORIZATION_TTL: "an hour" is not a duration (examples: "30s", "2m")',
  },
  {
    key: 'AUTHORIZATION_MAX_TTL',
    read: (c) => c.authLifetime.maxTtlMs,
    byDefault: 0,
    valid: '1d',
    parsed: 86_400_000,
    invalid: '-1h',
    message: 'AUTHORIZATION_MAX_TTL: "-1h" is not a duration (examples: "30s", "2m")',
  },
  {
    key: 'AUTHORIZATION_GRACE',
    read: (c) => c.authLifetime.graceMs,
    byDefault: 30_000,
    valid: '0',
    parsed: 0,
    invalid: 'soon',
    message: 'AUTHORIZATION_GRACE: "soon" is not a duration (examples: "30s", "2m")',
  },
  {
    key: 'TOPIC_HISTORY_SIZE',
    read: (c) => c.resume.historySize,
    byDefault: 100,
    valid: '0',
    parsed: 0,
    invalid: '-5',
    message: 'TOPIC_HISTORY_SIZE: "-5" is not a whole number >= 0',
  },
  {
    key: 'TOPIC_HISTORY_MAX_BYTES',
    read: (c) => c.resume.topicHistoryMaxBytes,
    byDefault: 1_048_576,
    valid: '64KiB',
    parsed: 65_536,
    invalid: '0',
    message: 'TOPIC_HISTORY_MAX_BYTES: "0" must be at least 1 byte',
  },
  {
    key: 'HISTORY_MEMORY_MAX_BYTES',
    read: (c) => c.resume.historyMemoryMaxBytes,
    byDefault: 268_435_456,
    valid: '1GiB',
    parsed: 1_073_741_824,
    invalid: 'lots',
    message: 'HISTORY_MEMORY_MAX_BYTES: "lots" is not a byte size (examples: "1048576", "512KiB", "10MiB")',
  },
  {
    key: 'RESUME_MAX_DETACHED_PER_USER',
    read: (c) => c.resume.maxDetachedPerUser,
    byDefault: 16,
    valid: '1',
    parsed: 1,
    invalid: '0',
    message: 'RESUME_MAX_DETACHED_PER_USER: "0" is not a whole number >= 1',
  },
  {
    key: 'TOPIC_HISTORY_TTL',
    read: (c) => c.resume.historyTtlMs,
    byDefault: 120_000,
    valid: '10m',
    parsed: 600_000,
    invalid: 'later',
    message: 'TOPIC_HISTORY_TTL: "later" is not a duration (examples: "30s", "2m")',
  },
  {
    key: 'NODE_ID',
    read: (c) => c.nodeId,
    byDefault: expect.stringMatching(/^[A-Za-z0-9]{12}$/),
    valid: 'node_01',
    parsed: 'node_01',
    invalid: 'ab',
    message: 'NODE_ID: "ab" is not a node id (4 to 32 of A-Z, a-z, 0-9, _)',
  },
  {
    key: 'LOG_LEVEL',
    read: (c) => c.log.level,
    byDefault: 'info',
    valid: 'DEBUG',
    parsed: 'debug',
    invalid: 'verbose',
    message: 'LOG_LEVEL: "verbose" is not allowed (allowed: error, warn, info, debug)',
  },
  {
    key: 'LOG_FORMAT',
    read: (c) => c.log.format,
    byDefault: 'json',
    valid: 'pretty',
    parsed: 'pretty',
    invalid: 'text',
    message: 'LOG_FORMAT: "text" is not allowed (allowed: json, pretty)',
  },
  {
    key: 'HOST',
    read: (c) => c.listeners.public.host,
    byDefault: '0.0.0.0',
    valid: '::',
    parsed: '::',
    invalid: 'bad host',
    message: 'HOST: "bad host" is not a host name or IP address',
  },
  {
    key: 'PORT',
    read: (c) => c.listeners.public.port,
    byDefault: 8080,
    valid: '0',
    parsed: 0,
    invalid: '65536',
    message: 'PORT: "65536" is not a port (0-65535)',
  },
  {
    key: 'BACKEND_API_HOST',
    read: (c) => c.listeners.internal.host,
    byDefault: '127.0.0.1',
    valid: 'localhost',
    parsed: 'localhost',
    invalid: 'a_b',
    message: 'BACKEND_API_HOST: "a_b" is not a host name or IP address',
  },
  {
    key: 'BACKEND_API_PORT',
    read: (c) => c.listeners.internal.port,
    byDefault: 8081,
    valid: '9000',
    parsed: 9000,
    invalid: 'http',
    message: 'BACKEND_API_PORT: "http" is not a port (0-65535)',
  },
  {
    key: 'HTTP_HEADERS_TIMEOUT',
    read: (c) => c.listeners.timeouts.headersMs,
    byDefault: 10_000,
    valid: '2s',
    parsed: 2_000,
    invalid: '0s',
    message: 'HTTP_HEADERS_TIMEOUT: "0s" must be longer than 0',
  },
  {
    key: 'HTTP_REQUEST_TIMEOUT',
    read: (c) => c.listeners.timeouts.requestMs,
    byDefault: 30_000,
    valid: '1m',
    parsed: 60_000,
    invalid: 'forever',
    message: 'HTTP_REQUEST_TIMEOUT: "forever" is not a duration (examples: "30s", "2m")',
  },
  {
    key: 'HTTP_KEEP_ALIVE_TIMEOUT',
    read: (c) => c.listeners.timeouts.keepAliveMs,
    byDefault: 5_000,
    valid: '500ms',
    parsed: 500,
    invalid: '5',
    message: 'HTTP_KEEP_ALIVE_TIMEOUT: "5" is not a duration (examples: "30s", "2m")',
  },
  {
    key: 'BACKEND_API_TOKEN',
    read: (c) => c.backendApiToken,
    byDefault: null,
    valid: 's3cret-token',
    parsed: 's3cret-token',
    invalid: 'has space',
    message: 'BACKEND_API_TOKEN: <redacted> must be printable ASCII without spaces',
  },
];

describe(loadConfig.name, () => {
  describe('environment variables', () => {
    const optionalRows = ENV_ROWS.filter((row) => row.key !== 'UPSTREAM_URL');

    it.each(optionalRows)('$key has its default when unset', ({ key, read, byDefault }) => {
      expect(read(loadConfig({ ...BASE, [key]: undefined }))).toEqual(byDefault);
    });

    it.each(optionalRows)('$key counts an empty string as unset', ({ key, read, byDefault }) => {
      expect(read(loadConfig({ ...BASE, [key]: '' }))).toEqual(byDefault);
    });

    it.each(ENV_ROWS)('$key accepts $valid', ({ key, read, valid, parsed }) => {
      expect(read(loadConfig({ ...BASE, [key]: valid }))).toEqual(parsed);
    });

    it.each(ENV_ROWS)('$key rejects $invalid with one clear line', ({ key, invalid, message }) => {
      expect(problemsOf({ ...BASE, [key]: invalid })).toEqual([message]);
    });

    it('requires UPSTREAM_URL without a file', () => {
      expect(problemsOf({})).toEqual(['UPSTREAM_URL: is required (or give GATEWAY_CONFIG with destinations)']);
    });

    it('a start-up that fails names the misspelt settings too (issue 34): UPSTREAM_ULR is why UPSTREAM_URL is missing', () => {
      expect(problemsOf({ UPSTREAM_ULR: 'http://127.0.0.1:9000' })).toEqual([
        'UPSTREAM_URL: is required (or give GATEWAY_CONFIG with destinations)',
        'UPSTREAM_ULR: is not a setting; did you mean UPSTREAM_URL?',
      ]);
    });

    it('routes * and gateway.* of the default handler to the default destination', () => {
      const sut = loadConfig(BASE);
      const target = { destination: 'default', pathPrefix: '' };
      expect(sut.handlers.map((h) => h.name)).toEqual(['default']);
      expect([...sut.handlers[0].messageHandlers]).toEqual([
        ['*', target],
        ['gateway.*', target],
      ]);
    });

    it('rejects CLIENT_MAX_IDLE_TIMEOUT below CLIENT_MIN_IDLE_TIMEOUT', () => {
      expect(problemsOf({ ...BASE, CLIENT_MIN_IDLE_TIMEOUT: '5m', CLIENT_MAX_IDLE_TIMEOUT: '1m' })).toEqual([
        'CLIENT_MAX_IDLE_TIMEOUT: "1m" is shorter than CLIENT_MIN_IDLE_TIMEOUT ("5m")',
      ]);
    });

    it('rejects HTTP_REQUEST_TIMEOUT below HTTP_HEADERS_TIMEOUT', () => {
      expect(problemsOf({ ...BASE, HTTP_HEADERS_TIMEOUT: '20s', HTTP_REQUEST_TIMEOUT: '10s' })).toEqual([
        'HTTP_REQUEST_TIMEOUT: "10s" is shorter than HTTP_HEADERS_TIMEOUT ("20s")',
      ]);
    });

    it('rejects TOPIC_HISTORY_TTL below RESUME_WINDOW (SPEC §12.4)', () => {
      expect(problemsOf({ ...BASE, RESUME_WINDOW: '5m', TOPIC_HISTORY_TTL: '2m' })).toEqual([
        'TOPIC_HISTORY_TTL: "2m" is shorter than RESUME_WINDOW ("5m")',
      ]);
    });

    it('rejects an ALLOWED_ORIGINS list with no entries', () => {
      expect(problemsOf({ ...BASE, ALLOWED_ORIGINS: ' , ' })).toEqual(['ALLOWED_ORIGINS: " , " lists no origin']);
    });

    it('ignores variables it does not know', () => {
      expect(loadConfig({ ...BASE, PATH: '/usr/bin', UNRELATED_TOKEN: 'x' }).listeners.public.port).toBe(8080);
    });

    it('collects every problem before throwing once', () => {
      const problems = problemsOf({ PORT: 'x', LOG_LEVEL: 'loud', UPSTREAM_TIMEOUT: '3 parsecs' });
      expect([...problems].sort()).toEqual([
        'LOG_LEVEL: "loud" is not allowed (allowed: error, warn, info, debug)',
        'PORT: "x" is not a port (0-65535)',
        'UPSTREAM_TIMEOUT: "3 parsecs" is not a duration (examples: "30s", "2m")',
        'UPSTREAM_URL: is required (or give GATEWAY_CONFIG with destinations)',
      ]);
    });

    it('never echoes secret values', () => {
      const error = (() => {
        try {
          return loadConfig({ ...BASE, BACKEND_API_TOKEN: 'top secret', REDIS_URL: 'mysql://u:pw@db' });
        } catch (caught) {
          return caught as Error;
        }
      })();
      expect(error).toBeInstanceOf(ConfigError);
      expect(String((error as Error).message)).not.toMatch(/top secret|pw@db/);
    });
  });

  describe('REDIS_URL forms (SPEC §13.2)', () => {
    it('takes a Sentinel URL as given', () => {
      const url = 'rediss+sentinel://gw:pw@s1.test:26379,s2.test:26379/prod?sentinel_password=spw';
      expect(loadConfig({ ...BASE, REDIS_URL: url }).redisUrl).toBe(url);
    });

    it('names the wrong part of a Sentinel URL on one line, without its secrets', () => {
      expect(problemsOf({ ...BASE, REDIS_URL: 'redis+sentinel://gw:hunter2@s1.test:26379,s2.test:0/prod' })).toEqual([
        'REDIS_URL: redis+sentinel:// URL: sentinel address "s2.test:0" is not host:port (a host name or IP address, [IPv6], port 1 to 65535)',
      ]);
      expect(problemsOf({ ...BASE, REDIS_URL: 'redis+sentinel://gw:hunter2@s1.test:26379' })).toEqual([
        'REDIS_URL: redis+sentinel:// URL: no master name (expected .../<master-name> after the sentinel addresses)',
      ]);
    });
  });

  describe('REDIS_SHARDS (SPEC §13.4)', () => {
    const control = 'redis://control.test:6379';

    it('reads the shards in order, whitespace-separated; unset: none', () => {
      const shards = 'redis://a.test:6379  rediss://:pw@b.test:6380\n redis+sentinel://s1.test:26379/c';
      expect(loadConfig({ ...BASE, REDIS_URL: control, REDIS_SHARDS: shards }).redisShards).toEqual([
        'redis://a.test:6379',
        'rediss://:pw@b.test:6380',
        'redis+sentinel://s1.test:26379/c',
      ]);
      expect(loadConfig({ ...BASE, REDIS_URL: control }).redisShards).toEqual([]);
    });

    it('names the bad shard by position, never its secrets', () => {
      const problems = problemsOf({
        ...BASE,
        REDIS_URL: control,
        REDIS_SHARDS: 'redis://a.test mysql://u:hunter2@b.test',
      });
      expect(problems).toHaveLength(1);
      expect(problems[0]).toMatch(/^REDIS_SHARDS: shard 2: /);
      expect(problems.join()).not.toContain('hunter2');
    });

    it('refuses an empty list, one Redis named twice, and shards without REDIS_URL', () => {
      expect(problemsOf({ ...BASE, REDIS_URL: control, REDIS_SHARDS: ' ' })).toEqual([
        'REDIS_SHARDS: lists no Redis URL (unset it to keep everything on REDIS_URL)',
      ]);
      expect(problemsOf({ ...BASE, REDIS_URL: control, REDIS_SHARDS: 'redis://a.test redis://a.test' })).toEqual([
        'REDIS_SHARDS: names one Redis twice',
      ]);
      expect(problemsOf({ ...BASE, REDIS_SHARDS: 'redis://a.test' })).toEqual([
        'REDIS_SHARDS: needs REDIS_URL (the control instance: node registry, liveness, node channels)',
      ]);
    });
  });

  describe('a Redis Cluster (SPEC §13.5)', () => {
    const cluster = 'redis+cluster://c1.test:7000,c2.test:7001';

    it('takes redis+cluster:// seeds as REDIS_URL', () => {
      expect(loadConfig({ ...BASE, REDIS_URL: cluster }).redisUrl).toBe(cluster);
    });

    it('refuses it with REDIS_SHARDS and as a shard', () => {
      expect(problemsOf({ ...BASE, REDIS_URL: cluster, REDIS_SHARDS: 'redis://a.test' })).toEqual([
        'REDIS_SHARDS: not with a Redis Cluster (REDIS_URL redis+cluster://): the cluster spreads the partitions over its primaries itself',
      ]);
      expect(problemsOf({ ...BASE, REDIS_URL: 'redis://a.test', REDIS_SHARDS: `redis://b.test ${cluster}` })).toEqual([
        'REDIS_SHARDS: shard 2: a Redis Cluster cannot be a shard (give it as REDIS_URL, without REDIS_SHARDS)',
      ]);
    });
  });

  describe('durations, sizes and booleans', () => {
    it.each([
      ['30s', 30_000],
      ['90 minutes', 5_400_000],
      ['200ms', 200],
      ['2h', 7_200_000],
      ['1h 30m', 5_400_000],
      ['1.5s', 1_500],
    ])('reads the duration %j as %d ms', (text, expectedMs) => {
      expect(destination(loadConfig({ ...BASE, UPSTREAM_TIMEOUT: text })).timeoutMs).toBe(expectedMs);
    });

    it.each(['3 parsecs', '-1s', ' ', '1000', '1s garbage', '1s2', 'Infinity', 'forever'])(
      'rejects the duration %j',
      (text) => {
        expect(problemsOf({ ...BASE, UPSTREAM_TIMEOUT: text })).toEqual([
          `UPSTREAM_TIMEOUT: ${JSON.stringify(text)} is not a duration (examples: "30s", "2m")`,
        ]);
      },
    );

    it.each([
      ['1MiB', 1_048_576],
      ['10MiB', 10_485_760],
      ['4MiB', 4_194_304],
      ['512KiB', 524_288],
      ['1048576', 1_048_576],
      ['10MB', 10_000_000],
      ['2kb', 2_000],
      ['1GiB', 1_073_741_824],
    ])('reads the byte size %j as %d', (text, expected) => {
      expect(loadConfig({ ...BASE, MAX_FRAME_BYTES: text }).limits.maxFrameBytes).toBe(expected);
    });

    it.each(['1.5MiB', '-1', 'MiB', '10 parsecs', '0x10', '1e6'])('rejects the byte size %j', (text) => {
      expect(problemsOf({ ...BASE, MAX_FRAME_BYTES: text })).toEqual([
        `MAX_FRAME_BYTES: ${JSON.stringify(text)} is not a byte size (examples: "1048576", "512KiB", "10MiB")`,
      ]);
    });

    it.each([
      ['true', true],
      ['false', false],
      ['1', true],
      ['0', false],
      ['yes', true],
      ['no', false],
      ['YES', true],
    ])('reads the boolean %j as %s', (text, expected) => {
      expect(loadConfig({ ...BASE, SESSION_INACTIVE_NOTIFY: text }).activity.shouldNotifyInactive).toBe(expected);
    });
  });

  describe('the result', () => {
    it('is deeply frozen, Maps and Sets included', () => {
      const sut = loadConfig({ ...BASE, ALLOWED_ORIGINS: 'https://a.test' });
      expect(Object.isFrozen(sut)).toBe(true);
      expect(Object.isFrozen(sut.limits)).toBe(true);
      expect(Object.isFrozen(destination(sut))).toBe(true);
      expect(Object.isFrozen(sut.handlers[0].messageHandlers.get('*'))).toBe(true);
      expect(() => (sut.destinations as Map<string, Destination>).delete('default')).toThrow(TypeError);
      expect(() => (sut.allowedOrigins as Set<string>).add('https://b.test')).toThrow(TypeError);
    });

    it('carries the package.json version', () => {
      expect(loadConfig(BASE).version).toMatch(/^\d+\.\d+\.\d+/);
    });

    it('draws a different random NODE_ID per load', () => {
      expect(loadConfig(BASE).nodeId).not.toBe(loadConfig(BASE).nodeId);
    });
  });
});
