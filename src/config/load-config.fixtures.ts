import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Destination, GatewayConfig } from './gateway-config';
import { ConfigError, loadConfig } from './load-config';

/** What the configuration specs share: an environment, the example file, how a failure reads, and the SPEC §1 table. */
export type Env = Record<string, string | undefined>;

export const BASE: Env = { UPSTREAM_URL: 'http://upstream.test:8000' };
export const EXAMPLE_YAML = readFileSync(join(__dirname, '../../config/gateway.example.yaml'), 'utf8');

/** The problem lines of a configuration that must fail. */
export function problemsOf(env: Env, fileText?: string): readonly string[] {
  try {
    loadConfig(env, fileText);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

export function destination(config: GatewayConfig, name = 'default'): Destination {
  const found = config.destinations.get(name);
  if (!found) throw new Error(`no destination ${name}`);
  return found;
}

export interface EnvRow {
  key: string;
  read: (config: GatewayConfig) => unknown;
  byDefault: unknown;
  valid: string;
  parsed: unknown;
  invalid: string;
  message: string;
}

/** SPEC §1, one row per variable, run by load-config.spec.ts (UPSTREAM_URL and GATEWAY_CONFIG also have their own tests there and in load-config-file.spec.ts). */
export const ENV_ROWS: EnvRow[] = [
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
