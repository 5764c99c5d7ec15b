import { randomInt } from 'node:crypto';
import { plainToInstance } from 'class-transformer';
import { getMetadataStorage, validateSync, ValidatorOptions } from 'class-validator';
import { parse as parseYaml } from 'yaml';
import { isMethodName } from '../protocol/identifiers';
import { tracingSettings } from '../tracing/tracing-settings';
import { backendTokenWarning } from './startup-summary';
import { backendApiExposure } from './backend-api-exposure';
import { EnvDto } from './env.dto';
import { DestinationDto, FileDto, HandlerDto } from './file.dto';
import type { Destination, GatewayConfig, Handler, LogFormat, LogLevel, RouteTarget } from './gateway-config';
import {
  checkDuration,
  joinPath,
  NAME,
  normaliseHttpUrl,
  parseBooleanText,
  parseByteSize,
  parseDurationMs,
  parseWholeNumber,
  problemLines,
  splitList,
} from './validators';
import { settingTypoWarnings } from './setting-typos';

/**
 * Invalid configuration: `message` (and `problems`) hold one line per problem,
 * `<key or file path>: <what is wrong, what is allowed>`, secrets shown as `<redacted>`.
 */
export class ConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(problems.join('\n'));
    this.name = 'ConfigError';
  }
}

/** The loaded configuration plus non-fatal notices the caller should log. */
export interface LoadedConfig {
  readonly config: GatewayConfig;
  readonly warnings: readonly string[];
}

const PATH_PREFIX = /^[^\s?#]*$/;
const ID_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const DEFAULT_NAME = 'default';
const ENV_OPTIONS: ValidatorOptions = { forbidUnknownValues: true, stopAtFirstError: true };
const FILE_OPTIONS: ValidatorOptions = { ...ENV_OPTIONS, whitelist: true, forbidNonWhitelisted: true };
const VERSION = readVersion();
/** Every environment setting (EnvDto's fields), for the typo warnings. */
const SETTINGS = [
  ...new Set(
    getMetadataStorage()
      .getTargetValidationMetadatas(EnvDto, '', true, false)
      .map((entry) => entry.propertyName),
  ),
];

interface FileRoutes {
  readonly destinations: ReadonlyMap<string, DestinationDto>;
  readonly handlers: readonly Handler[];
}

/**
 * Parses and validates the whole configuration (SPEC §1) in one pure step.
 * `env` is the process environment (empty strings count as unset); `fileText` is the
 * YAML text of GATEWAY_CONFIG, or undefined when there is no file (the caller reads it).
 * Returns a deeply frozen config with durations in ms and sizes in bytes.
 * Throws {@link ConfigError} listing every problem at once.
 */
export function loadConfig(env: Record<string, string | undefined>, fileText?: string): GatewayConfig {
  return loadConfigWithWarnings(env, fileText).config;
}

/**
 * Same as {@link loadConfig}, but also returns warnings (e.g. `UPSTREAM_URL` ignored
 * because a file is given) for the caller to log. Throws {@link ConfigError}.
 */
export function loadConfigWithWarnings(env: Record<string, string | undefined>, fileText?: string): LoadedConfig {
  const problems: string[] = [];
  const warnings: string[] = [];
  const raw = presentValues(env);
  const typos = settingTypoWarnings(Object.keys(raw), SETTINGS);
  warnings.push(...typos);
  if (fileText !== undefined) warnings.push(...dropRoutingVars(raw));
  const envDto = plainToInstance(EnvDto, raw, { excludeExtraneousValues: true, exposeDefaultValues: true });
  problems.push(...problemLines(validateSync(envDto, ENV_OPTIONS), ''));
  problems.push(...crossEnvProblems(envDto, fileText !== undefined));
  if (problems.length === 0) {
    const exposure = backendApiExposure({
      host: envDto.BACKEND_API_HOST,
      hasToken: envDto.BACKEND_API_TOKEN !== undefined,
      isInsecureAccepted: parseBooleanText(envDto.BACKEND_API_INSECURE) === true,
    });
    if (exposure.problem !== null) problems.push(exposure.problem);
    if (exposure.warning !== null) warnings.push(exposure.warning);
    const weakToken = backendTokenWarning(envDto.BACKEND_API_TOKEN);
    if (weakToken !== null) warnings.push(weakToken);
  }
  const file = fileText === undefined ? undefined : readFile(fileText, problems);
  const tracing = tracingSettings(raw, problems);
  // A misspelt setting is often why start-up fails (UPSTREAM_ULR → "UPSTREAM_URL: is required"): say it there too.
  if (problems.length > 0) throw new ConfigError([...problems, ...typos]);
  return { config: deepFreeze({ ...buildConfig(envDto, file), tracing }), warnings: Object.freeze(warnings) };
}

function presentValues(env: Record<string, string | undefined>): Record<string, string> {
  const present: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) if (value !== undefined && value !== '') present[key] = value;
  return present;
}

/** SPEC §1: with a file, handlers and destinations come from the file only. */
function dropRoutingVars(raw: Record<string, string>): string[] {
  const ignored = ['UPSTREAM_URL', 'WS_PATH'].filter((key) => key in raw);
  for (const key of ignored) delete raw[key];
  return ignored.map((key) => `${key}: ignored because GATEWAY_CONFIG defines handlers and destinations`);
}

function crossEnvProblems(env: EnvDto, hasFile: boolean): string[] {
  const problems: string[] = [];
  if (!hasFile && env.UPSTREAM_URL === undefined) {
    problems.push('UPSTREAM_URL: is required (or give GATEWAY_CONFIG with destinations)');
  }
  const isEachValid = [env.CLIENT_MIN_IDLE_TIMEOUT, env.CLIENT_MAX_IDLE_TIMEOUT].every(
    (text) => checkDuration()(text) === null,
  );
  if (isEachValid && ms(env.CLIENT_MAX_IDLE_TIMEOUT) < ms(env.CLIENT_MIN_IDLE_TIMEOUT)) {
    const min = JSON.stringify(env.CLIENT_MIN_IDLE_TIMEOUT);
    problems.push(
      `CLIENT_MAX_IDLE_TIMEOUT: ${JSON.stringify(env.CLIENT_MAX_IDLE_TIMEOUT)} is shorter than CLIENT_MIN_IDLE_TIMEOUT (${min})`,
    );
  }
  const areHistoryTimesValid = [env.RESUME_WINDOW, env.TOPIC_HISTORY_TTL].every(
    (text) => checkDuration(true)(text) === null,
  );
  if (areHistoryTimesValid && ms(env.TOPIC_HISTORY_TTL) < ms(env.RESUME_WINDOW)) {
    problems.push(
      `TOPIC_HISTORY_TTL: ${JSON.stringify(env.TOPIC_HISTORY_TTL)} is shorter than RESUME_WINDOW (${JSON.stringify(env.RESUME_WINDOW)})`,
    );
  }
  if (env.REDIS_SHARDS !== undefined && env.REDIS_URL === undefined) {
    problems.push('REDIS_SHARDS: needs REDIS_URL (the control instance: node registry, liveness, node channels)');
  }
  const isCluster = env.REDIS_URL !== undefined && /^rediss?\+cluster:/i.test(env.REDIS_URL);
  if (isCluster && env.REDIS_SHARDS !== undefined) {
    problems.push(
      'REDIS_SHARDS: not with a Redis Cluster (REDIS_URL redis+cluster://): the cluster spreads the partitions over its primaries itself',
    );
  }
  const areTimeoutsValid = [env.HTTP_HEADERS_TIMEOUT, env.HTTP_REQUEST_TIMEOUT].every(
    (text) => checkDuration()(text) === null,
  );
  if (areTimeoutsValid && ms(env.HTTP_REQUEST_TIMEOUT) < ms(env.HTTP_HEADERS_TIMEOUT)) {
    const headers = JSON.stringify(env.HTTP_HEADERS_TIMEOUT);
    problems.push(
      `HTTP_REQUEST_TIMEOUT: ${JSON.stringify(env.HTTP_REQUEST_TIMEOUT)} is shorter than HTTP_HEADERS_TIMEOUT (${headers})`,
    );
  }
  return problems;
}

function readFile(text: string, problems: string[]): FileRoutes | undefined {
  let plain: unknown;
  try {
    plain = parseYaml(text, { logLevel: 'error' });
  } catch (error) {
    problems.push(
      `GATEWAY_CONFIG: invalid YAML: ${String(error instanceof Error ? error.message : error).split('\n')[0]}`,
    );
    return undefined;
  }
  if (plain === null || typeof plain !== 'object' || Array.isArray(plain)) {
    problems.push('GATEWAY_CONFIG: must be a YAML mapping with "destinations" and "handlers"');
    return undefined;
  }
  const dto = plainToInstance(FileDto, plain);
  problems.push(...problemLines(validateSync(dto, FILE_OPTIONS), ''));
  const destinations = entriesOf<DestinationDto>(dto.destinations, 'destinations', 'destination', problems);
  const handlers = buildHandlers(
    entriesOf<HandlerDto>(dto.handlers, 'handlers', 'handler', problems),
    destinations,
    problems,
  );
  return { destinations, handlers };
}

/** Entries of a validated name → DTO map, with the name rule and the non-empty rule checked. */
function entriesOf<T>(value: unknown, where: string, noun: string, problems: string[]): Map<string, T> {
  if (!(value instanceof Map)) return new Map();
  if (value.size === 0) problems.push(`${where}: must define at least one ${noun}`);
  for (const name of value.keys()) {
    if (!NAME.test(String(name)))
      problems.push(`${joinPath(where, String(name))}: is not a valid name (allowed: A-Z, a-z, 0-9, _, -)`);
  }
  return value as Map<string, T>;
}

function buildHandlers(
  dtos: ReadonlyMap<string, HandlerDto>,
  destinations: ReadonlyMap<string, unknown>,
  problems: string[],
): Handler[] {
  const handlers: Handler[] = [];
  const ownerByPath = new Map<string, string>();
  for (const [name, dto] of dtos) {
    if (!(dto instanceof HandlerDto)) continue;
    const where = joinPath('handlers', name);
    const owner = ownerByPath.get(dto.path);
    if (owner !== undefined) {
      problems.push(`${where}.path: ${JSON.stringify(dto.path)} is already used by ${joinPath('handlers', owner)}`);
    } else if (typeof dto.path === 'string' && dto.path.startsWith('/')) ownerByPath.set(dto.path, name);
    const routes = buildRoutes(dto.message_handlers, `${where}.message_handlers`, destinations, problems);
    handlers.push({ name, path: dto.path, messageHandlers: routes });
  }
  return handlers;
}

function buildRoutes(
  table: unknown,
  where: string,
  destinations: ReadonlyMap<string, unknown>,
  problems: string[],
): Map<string, RouteTarget> {
  const routes = new Map<string, RouteTarget>();
  if (table === null || typeof table !== 'object' || Array.isArray(table)) return routes;
  for (const [pattern, target] of Object.entries(table)) {
    const at = joinPath(where, pattern);
    if (!isValidPattern(pattern))
      problems.push(`${at}: is not a valid pattern (allowed: "*", "<prefix>.*" or an exact method name)`);
    const route = parseTarget(target, at, destinations, problems);
    if (route) routes.set(pattern, route);
  }
  if (!Object.hasOwn(table, '*')) problems.push(`${where}: must contain the "*" pattern`);
  return routes;
}

/** `"chat/"` → {chat, ""}, `"auth/chat1"` → {auth, "/chat1"}, `"chat"` → {chat, ""}. */
function parseTarget(
  target: unknown,
  at: string,
  destinations: ReadonlyMap<string, unknown>,
  problems: string[],
): RouteTarget | null {
  if (typeof target !== 'string') {
    problems.push(`${at}: must be a string "<destination>/<path-prefix>"`);
    return null;
  }
  const slash = target.indexOf('/');
  const destination = slash === -1 ? target : target.slice(0, slash);
  const pathPrefix = slash === -1 ? '' : target.slice(slash).replace(/\/+$/, '');
  if (!destinations.has(destination)) {
    const defined = [...destinations.keys()].join(', ') || 'none';
    problems.push(`${at}: destination ${JSON.stringify(destination)} is not defined (defined: ${defined})`);
    return null;
  }
  if (!PATH_PREFIX.test(pathPrefix)) {
    problems.push(`${at}: path prefix ${JSON.stringify(pathPrefix)} must not contain spaces, "?" or "#"`);
    return null;
  }
  return { destination, pathPrefix };
}

function buildConfig(env: EnvDto, file: FileRoutes | undefined): Omit<GatewayConfig, 'tracing'> {
  return {
    version: VERSION,
    nodeId: env.NODE_ID ?? randomNodeId(),
    listeners: {
      public: { host: env.HOST, port: whole(env.PORT) },
      internal: { host: env.BACKEND_API_HOST, port: whole(env.BACKEND_API_PORT) },
      timeouts: {
        headersMs: ms(env.HTTP_HEADERS_TIMEOUT),
        requestMs: ms(env.HTTP_REQUEST_TIMEOUT),
        keepAliveMs: ms(env.HTTP_KEEP_ALIVE_TIMEOUT),
      },
    },
    backendApiToken: env.BACKEND_API_TOKEN ?? null,
    backendApiRequestIdHeader: env.REQUEST_ID_HEADER ?? 'X-Request-Id',
    destinations: file ? fileDestinations(file, env) : new Map([[DEFAULT_NAME, envDestination(env)]]),
    handlers: file ? file.handlers : [envHandler(env)],
    limits: {
      maxConnections: whole(env.MAX_CONNECTIONS),
      maxFrameBytes: bytes(env.MAX_FRAME_BYTES),
      maxPayloadBytes: bytes(env.MAX_PAYLOAD_BYTES),
      batchMaxCommands: whole(env.BATCH_MAX_COMMANDS),
      clientQueueMaxBytes: bytes(env.CLIENT_QUEUE_MAX_BYTES),
      clientMaxPendingCalls: whole(env.CLIENT_MAX_PENDING_CALLS),
    },
    activity: {
      newConnectionIdleTimeoutMs: ms(env.NEW_CONNECTION_IDLE_TIMEOUT),
      clientMinIdleTimeoutMs: ms(env.CLIENT_MIN_IDLE_TIMEOUT),
      clientMaxIdleTimeoutMs: ms(env.CLIENT_MAX_IDLE_TIMEOUT),
      shouldNotifyInactive: parseBooleanText(env.SESSION_INACTIVE_NOTIFY) ?? true,
    },
    allowedOrigins: env.ALLOWED_ORIGINS === undefined ? null : new Set(splitList(env.ALLOWED_ORIGINS)),
    pingIntervalMs: ms(env.PING_INTERVAL),
    shutdownGraceMs: ms(env.SHUTDOWN_GRACE),
    redisUrl: env.REDIS_URL ?? null,
    redisShards: env.REDIS_SHARDS === undefined ? [] : env.REDIS_SHARDS.split(/\s+/).filter((url) => url !== ''),
    redisPrefix: env.REDIS_PREFIX,
    latticeRetentionMs: ms(env.LATTICE_RETENTION),
    redisWait: { replicas: whole(env.REDIS_WAIT_REPLICAS), timeoutMs: ms(env.REDIS_WAIT_TIMEOUT) },
    resume: {
      windowMs: ms(env.RESUME_WINDOW),
      historySize: whole(env.TOPIC_HISTORY_SIZE),
      historyTtlMs: ms(env.TOPIC_HISTORY_TTL),
      topicHistoryMaxBytes: bytes(env.TOPIC_HISTORY_MAX_BYTES),
      historyMemoryMaxBytes: bytes(env.HISTORY_MEMORY_MAX_BYTES),
      maxDetachedPerUser: whole(env.RESUME_MAX_DETACHED_PER_USER),
    },
    authLifetime: {
      defaultTtlMs: ms(env.AUTHORIZATION_TTL),
      maxTtlMs: ms(env.AUTHORIZATION_MAX_TTL),
      graceMs: ms(env.AUTHORIZATION_GRACE),
    },
    log: { level: env.LOG_LEVEL.toLowerCase() as LogLevel, format: env.LOG_FORMAT.toLowerCase() as LogFormat },
  };
}

/** Without a file: destination "default" = UPSTREAM_URL, for `*` and `gateway.*`. */
function envDestination(env: EnvDto): Destination {
  return destination(DEFAULT_NAME, { url: env.UPSTREAM_URL ?? '' }, env);
}

function envHandler(env: EnvDto): Handler {
  const target: RouteTarget = { destination: DEFAULT_NAME, pathPrefix: '' };
  const messageHandlers = new Map([
    ['*', target],
    ['gateway.*', { ...target }],
  ]);
  return { name: DEFAULT_NAME, path: env.WS_PATH, messageHandlers };
}

function fileDestinations(file: FileRoutes, env: EnvDto): Map<string, Destination> {
  return new Map([...file.destinations].map(([name, dto]) => [name, destination(name, dto, env)]));
}

/** File values win; the destination-level env vars are the defaults (SPEC §1). */
function destination(name: string, dto: Partial<DestinationDto> & { url: string }, env: EnvDto): Destination {
  return {
    name,
    url: normaliseHttpUrl(dto.url),
    timeoutMs: ms(dto.timeout ?? env.UPSTREAM_TIMEOUT),
    maxSockets: whole(dto.max_sockets ?? env.UPSTREAM_MAX_SOCKETS),
    queueLimit: whole(dto.queue_limit ?? env.UPSTREAM_QUEUE_LIMIT),
    requestIdHeader: dto.request_id_header ?? env.REQUEST_ID_HEADER ?? null,
    overrideHostHeader: dto.override_host_header ?? null,
  };
}

function ms(text: string): number {
  return validated(parseDurationMs(text), text);
}

function bytes(text: string): number {
  return validated(parseByteSize(text), text);
}

function whole(value: unknown): number {
  return validated(parseWholeNumber(value), value);
}

/** Values reach the mapper only after validation, so a null here is a bug. */
function validated<T>(parsed: T | null, raw: unknown): T {
  if (parsed === null) throw new Error(`bug: unvalidated config value ${typeof raw}`);
  return parsed;
}

function randomNodeId(): string {
  return Array.from({ length: 12 }, () => ID_ALPHABET[randomInt(ID_ALPHABET.length)]).join('');
}

function readVersion(): string {
  // Relative to both src/config and dist/config.
  const pkg: unknown = require('../../package.json');
  const version = (pkg as { version?: unknown }).version;
  return typeof version === 'string' ? version : '0.0.0';
}

/** Freezes objects and arrays, and makes Maps and Sets refuse writes, all the way down. */
function deepFreeze<T>(value: T): T {
  if (value === null || typeof value !== 'object' || Object.isFrozen(value)) return value;
  if (value instanceof Map || value instanceof Set) {
    for (const method of ['set', 'add', 'delete', 'clear']) {
      if (method in value) Object.defineProperty(value, method, { value: refuseWrite });
    }
    value.forEach((entry: unknown) => deepFreeze(entry));
  } else {
    Object.values(value).forEach((entry: unknown) => deepFreeze(entry));
  }
  return Object.freeze(value);
}

function refuseWrite(): never {
  throw new TypeError('GatewayConfig is read-only');
}

/** `*`, `<method name>.*` or an exact method name (SPEC §1). */
function isValidPattern(pattern: string): boolean {
  return pattern === '*' || isMethodName(pattern.endsWith('.*') ? pattern.slice(0, -2) : pattern);
}
