import { isIP } from 'node:net';
import { getMetadataStorage, registerDecorator, ValidationError, ValidationOptions } from 'class-validator';
import { parseDurationMs } from './duration';
import { parseRedisUrl } from './redis-url';

export { parseDurationMs };
import { closestName } from './setting-typos';

/**
 * Placeholder in problem texts. The loader replaces it with the quoted value,
 * or with `<redacted>` for secrets; class-validator leaves it alone (unlike `$value`).
 */
export const VALUE = '{value}';

/** A check returns null when the value is fine, else the problem text (may contain {@link VALUE}). */
export type Check = (value: unknown) => string | null;

/** setTimeout fires at once beyond this, so no duration may exceed it. */
const MAX_TIMER_MS = 2_147_483_647;
const BYTE_SIZE_TEXT = /^\s*(\d+)\s*(b|kb|kib|mb|mib|gb|gib)?\s*$/i;
const BYTE_UNITS: Readonly<Record<string, number>> = {
  b: 1,
  kb: 1e3,
  kib: 1024,
  mb: 1e6,
  mib: 1024 ** 2,
  gb: 1e9,
  gib: 1024 ** 3,
};
const DIGITS = /^\d+$/;
/** Handler and destination names (SPEC §1). */
export const NAME = /^[A-Za-z0-9_-]+$/;
const SECRET_KEY = /TOKEN|PASSWORD|SECRET/i;
const URL_WITH_CREDENTIALS = /:\/\/[^/\s]*@/;
const NODE_ID = /^[A-Za-z0-9_]{4,32}$/;
/** No braces (they would change Redis Cluster hash tags) and no spaces. */
const REDIS_PREFIX = /^[A-Za-z0-9:_.-]{1,64}$/;
/** RFC 9110 token: the grammar of a header name. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const HOST_NAME = /^[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*$/;
const HOST_HEADER = /^[A-Za-z0-9._~%!$&'()*+,;=:[\]-]+$/;
const BEARER_TOKEN = /^[\x21-\x7e]+$/;
const BOOLEANS: Readonly<Record<string, boolean>> = {
  true: true,
  false: false,
  '1': true,
  '0': false,
  yes: true,
  no: false,
};

/** Parses `"1048576"`, `"512KiB"`, `"10MiB"`, `"10MB"` (unit case-insensitive) to bytes; null when malformed. */
export function parseByteSize(text: string): number | null {
  const match = BYTE_SIZE_TEXT.exec(text);
  if (!match) return null;
  const bytes = Number(match[1]) * BYTE_UNITS[(match[2] ?? 'b').toLowerCase()];
  return Number.isSafeInteger(bytes) ? bytes : null;
}

/** Parses a whole number given as digits or (from YAML) as a number; null otherwise. */
export function parseWholeNumber(value: unknown): number | null {
  if (typeof value === 'number') return Number.isSafeInteger(value) && value >= 0 ? value : null;
  if (typeof value !== 'string' || !DIGITS.test(value)) return null;
  const n = Number(value);
  return Number.isSafeInteger(n) ? n : null;
}

/** `true/false/1/0/yes/no` (case-insensitive) → boolean; null otherwise. */
export function parseBooleanText(text: string): boolean | null {
  return BOOLEANS[text.toLowerCase()] ?? null;
}

/** Splits a comma list, trimming entries and dropping empty ones. */
export function splitList(text: string): string[] {
  return text
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
}

/** Base URL without a trailing slash (`http://chat:8000/api`); assumes {@link checkHttpUrl} passed. */
export function normaliseHttpUrl(text: string): string {
  const url = new URL(text);
  return url.origin + url.pathname.replace(/\/+$/, '');
}

function tryUrl(value: unknown): URL | null {
  if (typeof value !== 'string') return null;
  try {
    return new URL(value);
  } catch {
    return null;
  }
}

/** Durations must parse strictly, be positive (or zero when allowed) and fit a timer. */
export function checkDuration(isZeroAllowed = false): Check {
  return (value) => {
    const ms = typeof value === 'string' ? parseDurationMs(value) : null;
    if (ms === null) return `${VALUE} is not a duration (examples: "30s", "2m")`;
    if (ms === 0 && !isZeroAllowed) return `${VALUE} must be longer than 0`;
    return ms > MAX_TIMER_MS ? `${VALUE} is too long (at most 24d)` : null;
  };
}

export const checkByteSize: Check = (value) => {
  const bytes = typeof value === 'string' ? parseByteSize(value) : parseWholeNumber(value);
  if (bytes === null) return `${VALUE} is not a byte size (examples: "1048576", "512KiB", "10MiB")`;
  return bytes < 1 ? `${VALUE} must be at least 1 byte` : null;
};

/** Whole number `>= min`, as digits or a YAML number. */
export function checkWholeNumber(min: number): Check {
  return (value) => {
    const n = parseWholeNumber(value);
    return n === null || n < min ? `${VALUE} is not a whole number >= ${min}` : null;
  };
}

export const checkPort: Check = (value) => {
  const n = parseWholeNumber(value);
  return n === null || n > 65535 ? `${VALUE} is not a port (0-65535)` : null;
};

export const checkNodeId: Check = (value) =>
  typeof value === 'string' && NODE_ID.test(value) ? null : `${VALUE} is not a node id (4 to 32 of A-Z, a-z, 0-9, _)`;

export const checkRedisPrefix: Check = (value) =>
  typeof value === 'string' && REDIS_PREFIX.test(value)
    ? null
    : `${VALUE} is not a Redis prefix (1 to 64 of A-Z, a-z, 0-9, ":", "_", ".", "-")`;

export const checkBooleanText: Check = (value) =>
  typeof value === 'string' && parseBooleanText(value) !== null
    ? null
    : `${VALUE} is not a boolean (allowed: true, false, 1, 0, yes, no)`;

/** One of `allowed`, compared case-insensitively. */
export function checkOneOf(allowed: readonly string[]): Check {
  return (value) =>
    typeof value === 'string' && allowed.includes(value.toLowerCase())
      ? null
      : `${VALUE} is not allowed (allowed: ${allowed.join(', ')})`;
}

export const checkHeaderName: Check = (value) =>
  typeof value === 'string' && HEADER_NAME.test(value) ? null : `${VALUE} is not a valid HTTP header name`;

export const checkHost: Check = (value) =>
  typeof value === 'string' && (isIP(value) !== 0 || HOST_NAME.test(value))
    ? null
    : `${VALUE} is not a host name or IP address`;

export const checkHostHeader: Check = (value) =>
  typeof value === 'string' && HOST_HEADER.test(value) ? null : `${VALUE} is not a valid Host header value`;

export const checkBearerToken: Check = (value) =>
  typeof value === 'string' && BEARER_TOKEN.test(value) ? null : `${VALUE} must be printable ASCII without spaces`;

export const checkPath: Check = (value) =>
  typeof value === 'string' && value.startsWith('/') ? null : 'must start with "/"';

export const checkHttpUrl: Check = (value) => {
  const url = tryUrl(value);
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    return `${VALUE} is not an http or https URL`;
  }
  const hasExtras = url.username || url.password || /[?#]/.test(String(value));
  return hasExtras ? `${VALUE} must not hold credentials, a query or a fragment` : null;
};

/** SPEC §11, §13.2, §13.5: `redis://`, `rediss://`, `redis+sentinel://`, `rediss+sentinel://`, `redis+cluster://`, `rediss+cluster://` (config/redis-url.ts). */
export const checkRedisUrl: Check = (value) =>
  typeof value === 'string' ? parseRedisUrl(value).problem : 'must be a string';

/** SPEC §13.4: whitespace-separated Redis URLs (no Redis Cluster), each as REDIS_URL; the first bad one is named by position. */
export const checkRedisShards: Check = (value) => {
  if (typeof value !== 'string') return 'must be a string';
  const urls = value.split(/\s+/).filter((url) => url !== '');
  if (urls.length === 0) return 'lists no Redis URL (unset it to keep everything on REDIS_URL)';
  for (const [i, url] of urls.entries()) {
    const { target, problem } = parseRedisUrl(url);
    if (problem !== null) return `shard ${i + 1}: ${problem}`;
    if (target.kind === 'cluster')
      return `shard ${i + 1}: a Redis Cluster cannot be a shard (give it as REDIS_URL, without REDIS_SHARDS)`;
  }
  if (new Set(urls).size < urls.length) return 'names one Redis twice';
  return null;
};

/** Each entry must be an exact origin (`https://host[:port]`), as browsers send it, or `*` (any). */
export const checkOriginList: Check = (value) => {
  const entries = typeof value === 'string' ? splitList(value) : [];
  if (entries.length === 0) return `${VALUE} lists no origin`;
  const bad = entries.find((entry) => entry !== '*' && tryUrl(entry)?.origin !== entry);
  return bad === undefined
    ? null
    : `${JSON.stringify(bad)} is not an origin (form: "https://host[:port]", no path or trailing slash; or "*" for any)`;
};

/** Turns a {@link Check} into a class-validator property decorator whose message is the check's text. */
export function Satisfies(check: Check, options?: ValidationOptions): PropertyDecorator {
  return (target, propertyKey) =>
    registerDecorator({
      name: check.name || 'satisfies',
      target: target.constructor,
      propertyName: String(propertyKey),
      options,
      validator: {
        validate: (value: unknown) => check(value) === null,
        defaultMessage: (args) => check(args?.value) ?? '',
      },
    });
}

/** `@IsDuration()`: a strict duration (config/duration.ts); `allowZero` for drain-style settings. */
export const IsDuration = (isZeroAllowed = false): PropertyDecorator => Satisfies(checkDuration(isZeroAllowed));
/** `@IsByteSize()`: `"10MiB"`, `"1048576"`…, at least 1 byte. */
export const IsByteSize = (): PropertyDecorator => Satisfies(checkByteSize);
/** `@IsWholeNumber(min)`: digits (or a YAML number) `>= min`. */
export const IsWholeNumber = (min: number): PropertyDecorator => Satisfies(checkWholeNumber(min));
/** `@IsPort()`: integer 0–65535 (0 = ephemeral). */
export const IsPort = (): PropertyDecorator => Satisfies(checkPort);
/** `@IsNodeId()`: `[A-Za-z0-9_]{4,32}`. */
export const IsNodeId = (): PropertyDecorator => Satisfies(checkNodeId);
/** `@IsRedisPrefix()`: `[A-Za-z0-9:_.-]{1,64}`. */
export const IsRedisPrefix = (): PropertyDecorator => Satisfies(checkRedisPrefix);
/** `@IsBooleanText()`: true/false/1/0/yes/no. */
export const IsBooleanText = (): PropertyDecorator => Satisfies(checkBooleanText);
/** `@IsOneOf([...])`: case-insensitive choice. */
export const IsOneOf = (allowed: readonly string[]): PropertyDecorator => Satisfies(checkOneOf(allowed));
/** `@IsHeaderName()`: an HTTP token such as `X-Request-Id`. */
export const IsHeaderName = (): PropertyDecorator => Satisfies(checkHeaderName);
/** `@IsHost()`: a host name or an IPv4/IPv6 address to listen on. */
export const IsHost = (): PropertyDecorator => Satisfies(checkHost);
/** `@IsHostHeader()`: a Host header value (`host[:port]`). */
export const IsHostHeader = (): PropertyDecorator => Satisfies(checkHostHeader);
/** `@IsBearerToken()`: visible ASCII, no spaces. */
export const IsBearerToken = (): PropertyDecorator => Satisfies(checkBearerToken);
/** `@IsPath()`: starts with `/`. */
export const IsPath = (): PropertyDecorator => Satisfies(checkPath);
/** `@IsHttpUrl()`: http(s) base URL without credentials, query or fragment. */
export const IsHttpUrl = (): PropertyDecorator => Satisfies(checkHttpUrl);
/** `@IsRedisUrl()`: `redis://`, `rediss://` or a Sentinel URL (`redis+sentinel://`, `rediss+sentinel://`). */
export const IsRedisUrl = (): PropertyDecorator => Satisfies(checkRedisUrl);
/** `@IsRedisShards()`: SPEC §13.4's REDIS_SHARDS. */
export const IsRedisShards = (): PropertyDecorator => Satisfies(checkRedisShards);
/** `@IsOriginList()`: comma list of exact origins. */
export const IsOriginList = (): PropertyDecorator => Satisfies(checkOriginList);

/**
 * Maps class-validator errors to `path: text` lines: {@link VALUE} becomes the quoted value
 * (`<redacted>` for REDIS_URL, keys matching TOKEN/PASSWORD/SECRET and URLs with credentials),
 * and an unknown key lists the allowed ones.
 */
export function problemLines(errors: readonly ValidationError[], parent: string): string[] {
  return errors.flatMap((error) => {
    const path = joinPath(parent, error.property);
    const own = Object.entries(error.constraints ?? {}).map(([name, text]) =>
      name === 'whitelistValidation'
        ? `${path}: is not allowed (allowed: ${allowedKeys(error.target).join(', ')})${didYouMean(error.property, allowedKeys(error.target))}`
        : `${path}: ${text.replace(VALUE, shown(path, error.value))}`,
    );
    return [...own, ...problemLines(error.children ?? [], path)];
  });
}

/** `; did you mean max_sockets?` for an unknown YAML key close to an allowed one (issue 20), else empty. */
function didYouMean(key: string, allowed: readonly string[]): string {
  const meant = closestName(key, allowed);
  return meant === null ? '' : `; did you mean ${meant}?`;
}

function allowedKeys(target: object | undefined): string[] {
  if (target === undefined) return [];
  const metadata = getMetadataStorage().getTargetValidationMetadatas(target.constructor, '', true, false);
  return [...new Set(metadata.map((entry) => entry.propertyName))];
}

/** A value as it may appear in a problem line: quoted, or `<redacted>` for secrets. */
function shown(path: string, value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  if (path === 'REDIS_URL' || path === 'REDIS_SHARDS' || SECRET_KEY.test(path) || URL_WITH_CREDENTIALS.test(text))
    return '<redacted>';
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

/** `handlers` + `chat1` → `handlers.chat1`; odd keys are quoted: `message_handlers["gateway.*"]`. */
export function joinPath(parent: string, key: string): string {
  if (!NAME.test(key)) return `${parent}[${JSON.stringify(key)}]`;
  return parent === '' ? key : `${parent}.${key}`;
}
