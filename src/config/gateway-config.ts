import type { TracingSettings } from '../tracing/tracing-settings';

/**
 * The gateway's whole configuration after one validated parse (SPEC §1).
 * Units are normalised: durations in milliseconds, sizes in bytes.
 * It is an abstract class so that it can serve as a typed DI token.
 */
export abstract class GatewayConfig {
  /** package.json version, sent as `User-Agent: gateway/<version>`. */
  abstract readonly version: string;
  /** This node's id, `[A-Za-z0-9_]{4,32}` (random when NODE_ID is unset). */
  abstract readonly nodeId: string;
  abstract readonly listeners: Listeners;
  /** BACKEND_API_TOKEN; null when the backend API is open (loopback only). */
  abstract readonly backendApiToken: string | null;
  /** Header carrying a /v1 request's id, read when the caller sends it and echoed: REQUEST_ID_HEADER, else X-Request-Id. */
  abstract readonly backendApiRequestIdHeader: string;
  /** Keyed by destination name. */
  abstract readonly destinations: ReadonlyMap<string, Destination>;
  /** WebSocket handlers; paths are unique. */
  abstract readonly handlers: ReadonlyArray<Handler>;
  abstract readonly limits: Limits;
  abstract readonly activity: ActivityTimings;
  /** ALLOWED_ORIGINS: exact origins, `*` among them = any; null = same origin as the Host header (SPEC §1). */
  abstract readonly allowedOrigins: ReadonlySet<string> | null;
  abstract readonly pingIntervalMs: number;
  abstract readonly shutdownGraceMs: number;
  /** REDIS_URL (`redis://`, `rediss://` or a Sentinel URL, config/redis-url.ts); null = single node. */
  abstract readonly redisUrl: string | null;
  /** REDIS_SHARDS (SPEC §13.4): the partitions' Redis URLs in order; empty = every partition on REDIS_URL. */
  abstract readonly redisShards: readonly string[];
  /** REDIS_PREFIX: of every Redis key and channel (SPEC §11). */
  abstract readonly redisPrefix: string;
  /** LATTICE_RETENTION: how long Redis keeps a namespace nobody subscribes to after its last update. */
  abstract readonly latticeRetentionMs: number;
  /** REDIS_WAIT_REPLICAS / REDIS_WAIT_TIMEOUT (SPEC §13.1). */
  abstract readonly redisWait: RedisWait;
  /** SPEC §12: resumable sessions and topic history. */
  abstract readonly resume: ResumeSettings;
  /** SPEC §14: authorization lifetime and refresh. */
  abstract readonly authLifetime: AuthLifetimeSettings;
  abstract readonly log: LogSettings;
  /** OpenTelemetry, from the standard OTEL_* variables; `tracesUrl` null = off. */
  abstract readonly tracing: TracingSettings;
}

/** SPEC §13.1: writes confirmed by `replicas` Redis replicas within `timeoutMs` before they are acknowledged (0 = not asked). */
export interface RedisWait {
  readonly replicas: number;
  readonly timeoutMs: number;
}

export interface ListenAddress {
  readonly host: string;
  /** 0 = ephemeral (tests). */
  readonly port: number;
}

export interface Listeners {
  readonly public: ListenAddress;
  readonly internal: ListenAddress;
  /** The same on both listeners. */
  readonly timeouts: ListenerTimeouts;
}

/** HTTP timeouts of both listeners (SPEC §1 hardening, issue 11). */
export interface ListenerTimeouts {
  /** HTTP_HEADERS_TIMEOUT: from the first byte of a request (or the connection) to the end of its headers; then 408. */
  readonly headersMs: number;
  /** HTTP_REQUEST_TIMEOUT: to the end of the whole request, body included; then 408. At least headersMs. */
  readonly requestMs: number;
  /** HTTP_KEEP_ALIVE_TIMEOUT: an idle keep-alive connection between requests is closed after this. */
  readonly keepAliveMs: number;
}

export interface Destination {
  readonly name: string;
  /** Base URL without a trailing slash, e.g. `http://chat:8000/api`. */
  readonly url: string;
  readonly timeoutMs: number;
  readonly maxSockets: number;
  readonly queueLimit: number;
  /** e.g. `X-Request-Id`; null = not sent. */
  readonly requestIdHeader: string | null;
  /** Value of the Host header; null = derived from url. */
  readonly overrideHostHeader: string | null;
}

/** Where one method pattern goes: a destination plus a path prefix (`""` or `/chat1`). */
export interface RouteTarget {
  readonly destination: string;
  /** Empty, or starts with `/` and has no trailing `/`. */
  readonly pathPrefix: string;
}

export interface Handler {
  readonly name: string;
  /** Starts with `/`. */
  readonly path: string;
  /** pattern (`*`, `prefix.*` or an exact method name) → target. Contains `*`. */
  readonly messageHandlers: ReadonlyMap<string, RouteTarget>;
}

export interface Limits {
  readonly maxConnections: number;
  readonly maxFrameBytes: number;
  readonly maxPayloadBytes: number;
  /** BATCH_MAX_COMMANDS: most commands in one `POST /v1/batch` (SPEC §5). */
  readonly batchMaxCommands: number;
  readonly clientQueueMaxBytes: number;
  /** CLIENT_MAX_PENDING_CALLS: calls one connection may have awaiting their upstream answer (SPEC §1). */
  readonly clientMaxPendingCalls: number;
}

export interface ActivityTimings {
  readonly newConnectionIdleTimeoutMs: number;
  readonly clientMinIdleTimeoutMs: number;
  readonly clientMaxIdleTimeoutMs: number;
  readonly shouldNotifyInactive: boolean;
}

/** SPEC §12 (RESUME_WINDOW, TOPIC_HISTORY_*, HISTORY_MEMORY_MAX_BYTES, RESUME_MAX_DETACHED_PER_USER). */
export interface ResumeSettings {
  /** How long a dropped resumable session waits for its client; 0 = resumable sessions off. */
  readonly windowMs: number;
  /** Messages kept per topic for replay; 0 = no history (offsets are still counted). */
  readonly historySize: number;
  /** How long a topic's history is kept after its last publish; at least windowMs. */
  readonly historyTtlMs: number;
  /** TOPIC_HISTORY_MAX_BYTES: payload bytes kept per topic; the oldest messages go first. */
  readonly topicHistoryMaxBytes: number;
  /** HISTORY_MEMORY_MAX_BYTES: one node's whole in-memory history (single node only). */
  readonly historyMemoryMaxBytes: number;
  /** RESUME_MAX_DETACHED_PER_USER: detached sessions one user may hold on this node. */
  readonly maxDetachedPerUser: number;
}

/** SPEC §14 (AUTHORIZATION_TTL, AUTHORIZATION_MAX_TTL, AUTHORIZATION_GRACE). */
export interface AuthLifetimeSettings {
  /** Lifetime of an authorization whose answer has no `Gateway-Auth-TTL`; 0 = unlimited. */
  readonly defaultTtlMs: number;
  /** Cap on every lifetime; 0 = no cap. */
  readonly maxTtlMs: number;
  /** Failing refreshes are retried until the lifetime's end plus this. */
  readonly graceMs: number;
}

export type LogLevel = 'error' | 'warn' | 'info' | 'debug';
export type LogFormat = 'json' | 'pretty';

export interface LogSettings {
  readonly level: LogLevel;
  readonly format: LogFormat;
}
