import { RedisTarget } from './redis-url';

const REDACTED = '<redacted>';
/** Query keys that may carry a credential (ioredis reads `password` from a URL's query too). */
const SECRET_QUERY_KEY = /pass|user|secret|token|auth/i;

/**
 * REDIS_URL as log lines show it (SPEC §10: never a credential): a URL
 * without credentials as it is, so a wrong host, port, database or scheme
 * (`redis://` against a TLS port) is seen at once; with a user name or
 * password, the same URL with them replaced by `<redacted>`. A Sentinel URL
 * keeps its sentinels and master name, a Cluster URL its seed nodes; a query that may hold a credential is
 * redacted as a whole.
 */
export function redisUrlForLog(text: string, target: RedisTarget): string {
  if (target.kind === 'cluster') {
    const { seeds, username, password } = target.options;
    const scheme = text.slice(0, text.indexOf(':'));
    const hosts = seeds.map(({ host, port }) => `${host}:${port}`).join(',');
    return `${scheme}://${username !== undefined || password !== undefined ? `${REDACTED}@` : ''}${hosts}`;
  }
  if (target.kind === 'sentinel') {
    const { sentinels, name, username, password } = target.options;
    const scheme = text.slice(0, text.indexOf(':'));
    const hosts = sentinels.map(({ host, port }) => `${host}:${port}`).join(',');
    const query = text.includes('?') ? `?${REDACTED}` : '';
    return `${scheme}://${username !== undefined || password !== undefined ? `${REDACTED}@` : ''}${hosts}/${name}${query}`;
  }
  const url = new URL(target.url);
  const hasCredentials = url.username !== '' || url.password !== '';
  const query = [...url.searchParams.keys()].some((key) => SECRET_QUERY_KEY.test(key)) ? `?${REDACTED}` : url.search;
  if (!hasCredentials && query === url.search) return text;
  return `${url.protocol}//${hasCredentials ? `${REDACTED}@` : ''}${url.host}${url.pathname === '/' ? '' : url.pathname}${query}`;
}

/**
 * The cause of a Redis connection error as logged: its code and message
 * (`ECONNREFUSED`, `ENOTFOUND`, `NOAUTH`, `WRONGPASS`, ...). Errors from
 * ioredis and Node's sockets carry addresses, never credentials.
 */
export function redisErrorCause(err: Error & { code?: unknown }): string {
  return typeof err.code === 'string' && !err.message.includes(err.code) ? `${err.code}: ${err.message}` : err.message;
}
