import { RedisTarget } from './redis-url';

/** ioredis' port for a `redis://` URL without one. */
const DEFAULT_REDIS_PORT = 6379;

/**
 * Where a REDIS_URL points, for log lines: `host:port` of one Redis, or
 * `sentinel <master> at host:port,...` for a Sentinel-managed primary. Never
 * a user name, a password or a query value (the URL's credentials stay out of
 * the logs, SPEC §10), always the host, so a wrong host is seen at once.
 */
export function redisAddressOf(target: RedisTarget): string {
  if (target.kind === 'sentinel') {
    const sentinels = target.options.sentinels.map(({ host, port }) => hostPort(host, port)).join(',');
    return `sentinel ${target.options.name} at ${sentinels}`;
  }
  const url = new URL(target.url);
  return hostPort(url.hostname, url.port === '' ? DEFAULT_REDIS_PORT : Number(url.port));
}

function hostPort(host: string, port: number): string {
  return `${host}:${port}`;
}

/**
 * The cause of a Redis connection error as logged: its code and message
 * (`ECONNREFUSED`, `ENOTFOUND`, `NOAUTH`, `WRONGPASS`, ...). Errors from
 * ioredis and Node's sockets carry addresses, never credentials.
 */
export function redisErrorCause(err: Error & { code?: unknown }): string {
  return typeof err.code === 'string' && !err.message.includes(err.code) ? `${err.code}: ${err.message}` : err.message;
}
