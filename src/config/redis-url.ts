import { isIP } from 'node:net';
import { closestName } from './setting-typos';

/** A sentinel's address as ioredis takes it. */
export interface SentinelAddress {
  readonly host: string;
  readonly port: number;
}

/**
 * The ioredis options a Sentinel URL stands for (SPEC §13.2): ioredis asks
 * `sentinels` for the primary of master group `name`, then connects to it
 * with `username`/`password`; `sentinelUsername`/`sentinelPassword` are for
 * the sentinels themselves. `tls`, `sentinelTLS` and
 * `enableTLSForSentinelMode` are set for `rediss+sentinel://`.
 */
export interface SentinelOptions {
  readonly sentinels: readonly SentinelAddress[];
  readonly name: string;
  readonly username?: string;
  readonly password?: string;
  readonly sentinelUsername?: string;
  readonly sentinelPassword?: string;
  readonly tls?: Record<string, never>;
  readonly sentinelTLS?: Record<string, never>;
  readonly enableTLSForSentinelMode?: boolean;
}

/**
 * A Redis Cluster (SPEC §13.5): seed nodes (any of its nodes; the slot map
 * names the rest), the credentials every node shares, `tls` for
 * `rediss+cluster://`.
 */
export interface ClusterOptions {
  readonly seeds: readonly SentinelAddress[];
  readonly username?: string;
  readonly password?: string;
  readonly tls?: Record<string, never>;
}

/** What REDIS_URL names: one Redis (ioredis reads the URL itself, as it always did), a Sentinel-managed primary, or a Redis Cluster. */
export type RedisTarget =
  | { readonly kind: 'direct'; readonly url: string }
  | { readonly kind: 'sentinel'; readonly options: SentinelOptions }
  | { readonly kind: 'cluster'; readonly options: ClusterOptions };

/** The parse: a target, or one problem text that never holds a secret. */
export type RedisUrlParse =
  { readonly target: RedisTarget; readonly problem: null } | { readonly target: null; readonly problem: string };

/** Sentinel's own default port, for an address given without one. */
export const DEFAULT_SENTINEL_PORT = 26379;
/** Redis' own default port, for a cluster seed given without one. */
export const DEFAULT_REDIS_PORT = 6379;
const SCHEME = /^([A-Za-z][A-Za-z0-9+.-]*):/;
const SENTINEL_SCHEMES: Readonly<Record<string, boolean>> = { 'redis+sentinel': false, 'rediss+sentinel': true };
const CLUSTER_SCHEMES: Readonly<Record<string, boolean>> = { 'redis+cluster': false, 'rediss+cluster': true };
const QUERY_KEYS = { sentinel_username: 'sentinelUsername', sentinel_password: 'sentinelPassword' } as const;
type QueryKey = keyof typeof QUERY_KEYS;
const HOST_NAME = /^[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*$/;
const HOST_PORT = /^(\[[0-9A-Fa-f:.]+\]|[^:[\]]+)(?::(\d{1,5}))?$/;
/** A master name as `sentinel monitor` takes it: visible ASCII. */
const MASTER_NAME = /^[\x21-\x7e]{1,128}$/;
const FORM = '[user:password@]host:port[,host:port...]/<master-name>[?sentinel_username=...&sentinel_password=...]';
const CLUSTER_FORM = '[user:password@]host:port[,host:port...]';
const ALLOWED_SCHEMES =
  'redis://, rediss://, redis+sentinel://, rediss+sentinel://, redis+cluster:// or rediss+cluster://';

class UrlProblem extends Error {}

/**
 * Parses REDIS_URL (SPEC §11, §13.2). `redis://` and `rediss://` are checked
 * as before (a URL of that scheme) and left for ioredis to read;
 * `redis+sentinel://` and `rediss+sentinel://` are parsed here into
 * {@link SentinelOptions}. A problem text names the wrong part (scheme, a
 * sentinel address, the master name, a query parameter) and never repeats the
 * user name, a password or a query value (nor the whole URL, whatever its
 * scheme).
 */
export function parseRedisUrl(text: string): RedisUrlParse {
  const scheme = SCHEME.exec(text)?.[1].toLowerCase();
  if (scheme === 'redis' || scheme === 'rediss') {
    return isUrl(text)
      ? { target: { kind: 'direct', url: text }, problem: null }
      : { target: null, problem: `is not a valid ${scheme}:// URL` };
  }
  if (scheme !== undefined && Object.hasOwn(CLUSTER_SCHEMES, scheme)) {
    return parsed(scheme, () => ({ kind: 'cluster', options: parseClusterUrl(scheme, text.slice(scheme.length + 1)) }));
  }
  if (scheme === undefined || !Object.hasOwn(SENTINEL_SCHEMES, scheme))
    return { target: null, problem: `the scheme must be ${ALLOWED_SCHEMES}` };
  return parsed(scheme, () => ({ kind: 'sentinel', options: parseSentinelUrl(scheme, text.slice(scheme.length + 1)) }));
}

/** The target `parse` builds, or its {@link UrlProblem} as the problem text. */
function parsed(scheme: string, parse: () => RedisTarget): RedisUrlParse {
  try {
    return { target: parse(), problem: null };
  } catch (err) {
    if (!(err instanceof UrlProblem)) throw err;
    return { target: null, problem: `${scheme}:// URL: ${err.message}` };
  }
}

/** `rest` is what follows `<scheme>:`: seed nodes and credentials, nothing else (SPEC §13.5). */
function parseClusterUrl(scheme: string, rest: string): ClusterOptions {
  if (!rest.startsWith('//')) throw new UrlProblem(`expected ${scheme}://${CLUSTER_FORM}`);
  const body = rest.slice(2);
  const at = body.lastIndexOf('@');
  const authority = at === -1 ? body : body.slice(at + 1);
  if (/[/?#]/.test(authority))
    throw new UrlProblem(
      'takes no path, query or fragment (a Redis Cluster has database 0 only); percent-encode "/", "?", "#" and "@" in user names and passwords',
    );
  return {
    seeds: addresses(authority, 'seed node', DEFAULT_REDIS_PORT, CLUSTER_FORM),
    ...(at === -1 ? {} : userInfo(body.slice(0, at))),
    ...(CLUSTER_SCHEMES[scheme] ? { tls: {} } : {}),
  };
}

/** `rest` is what follows `<scheme>:`. */
function parseSentinelUrl(scheme: string, rest: string): SentinelOptions {
  if (!rest.startsWith('//')) throw new UrlProblem(`expected ${scheme}://${FORM}`);
  const body = rest.slice(2);
  const authorityEnd = body.search(/[/?#]/);
  const authority = authorityEnd === -1 ? body : body.slice(0, authorityEnd);
  const tail = authorityEnd === -1 ? '' : body.slice(authorityEnd);
  // A password with an unencoded "/", "?" or "#" ends the authority early: its "@" then shows up later.
  if (tail.includes('@'))
    throw new UrlProblem(
      '"@" after the sentinel addresses: percent-encode "/", "?", "#" and "@" in user names and passwords',
    );
  if (tail.includes('#')) throw new UrlProblem('must not have a fragment ("#"); percent-encode "#" in passwords');
  const at = authority.lastIndexOf('@');
  const credentials = at === -1 ? {} : userInfo(authority.slice(0, at));
  const queryStart = tail.indexOf('?');
  const path = queryStart === -1 ? tail : tail.slice(0, queryStart);
  const isTls = SENTINEL_SCHEMES[scheme];
  return {
    sentinels: addresses(authority.slice(at + 1), 'sentinel address', DEFAULT_SENTINEL_PORT, FORM),
    name: masterName(path),
    ...credentials,
    ...queryOptions(queryStart === -1 ? '' : tail.slice(queryStart + 1)),
    ...(isTls ? { tls: {}, sentinelTLS: {}, enableTLSForSentinelMode: true } : {}),
  };
}

function userInfo(text: string): Pick<SentinelOptions, 'username' | 'password'> {
  const colon = text.indexOf(':');
  const username = decoded(colon === -1 ? text : text.slice(0, colon), 'the user name');
  const password = colon === -1 ? '' : decoded(text.slice(colon + 1), 'the password');
  return { ...(username === '' ? {} : { username }), ...(password === '' ? {} : { password }) };
}

function addresses(text: string, what: string, defaultPort: number, form: string): SentinelAddress[] {
  if (text === '') throw new UrlProblem(`no ${what} (expected ${form})`);
  return text.split(',').map((entry) => {
    const match = HOST_PORT.exec(entry);
    const host = match?.[1].replace(/^\[(.*)\]$/, '$1') ?? '';
    const port = match?.[2] === undefined ? defaultPort : Number(match[2]);
    const isHost = isIP(host) !== 0 || HOST_NAME.test(host);
    if (!match || !isHost || port < 1 || port > 65535) {
      throw new UrlProblem(
        `${what} ${JSON.stringify(entry)} is not host:port (a host name or IP address, [IPv6], port 1 to 65535)`,
      );
    }
    return { host, port };
  });
}

function masterName(path: string): string {
  if (path === '' || path === '/')
    throw new UrlProblem('no master name (expected .../<master-name> after the sentinel addresses)');
  const name = decoded(path.slice(1), 'the master name');
  if (name.includes('/') || !MASTER_NAME.test(name))
    throw new UrlProblem('the master name must be one path segment of visible ASCII (at most 128 characters)');
  return name;
}

function queryOptions(query: string): Pick<SentinelOptions, 'sentinelUsername' | 'sentinelPassword'> {
  const options: Partial<Record<(typeof QUERY_KEYS)[QueryKey], string>> = {};
  for (const pair of query.split('&').filter((entry) => entry !== '')) {
    const equals = pair.indexOf('=');
    const key = decoded(equals === -1 ? pair : pair.slice(0, equals), 'a query parameter name');
    if (!Object.hasOwn(QUERY_KEYS, key)) throw new UrlProblem(unknownParameter(key));
    const option = QUERY_KEYS[key as QueryKey];
    if (options[option] !== undefined) throw new UrlProblem(`query parameter ${key} is given twice`);
    const value = equals === -1 ? '' : decoded(pair.slice(equals + 1).replace(/\+/g, ' '), `query parameter ${key}`);
    if (value === '') throw new UrlProblem(`query parameter ${key} is empty`);
    options[option] = value;
  }
  return options;
}

/** The name is not repeated: with an unencoded "&" in a password, it would be a piece of the password. */
function unknownParameter(key: string): string {
  const allowed = Object.keys(QUERY_KEYS);
  const meant = closestName(key, allowed);
  return `unknown query parameter${meant === null ? '' : `; did you mean ${meant}?`} (allowed: ${allowed.join(', ')}; percent-encode "&" and "=" in values)`;
}

function decoded(text: string, what: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw new UrlProblem(`${what} has a malformed percent-encoding`);
  }
}

function isUrl(text: string): boolean {
  try {
    new URL(text);
    return true;
  } catch {
    return false;
  }
}
