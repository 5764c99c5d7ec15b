import { Expose } from 'class-transformer';
import { IsOptional, IsString } from 'class-validator';
import {
  IsBearerToken,
  IsBooleanText,
  IsByteSize,
  IsDuration,
  IsHeaderName,
  IsHost,
  IsHttpUrl,
  IsNodeId,
  IsOneOf,
  IsOriginList,
  IsPath,
  IsPort,
  IsRedisPrefix,
  IsRedisShards,
  IsRedisUrl,
  IsWholeNumber,
} from './validators';

export const LOG_LEVELS = ['error', 'warn', 'info', 'debug'] as const;
export const LOG_FORMATS = ['json', 'pretty'] as const;

/**
 * The raw environment (SPEC §1): one field per variable, strings as given.
 * Defaults are written here as the same raw strings, so they take the same parse path.
 * Empty strings count as unset and must be dropped before `plainToInstance`
 * (with `excludeExtraneousValues` and `exposeDefaultValues`).
 */
export class EnvDto {
  /** Required unless GATEWAY_CONFIG defines destinations (checked by the loader). */
  @Expose() @IsOptional() @IsHttpUrl() UPSTREAM_URL?: string;
  @Expose() @IsPath() WS_PATH: string = '/';

  @Expose() @IsDuration() UPSTREAM_TIMEOUT: string = '30s';
  @Expose() @IsWholeNumber(1) UPSTREAM_MAX_SOCKETS: string = '100';
  @Expose() @IsWholeNumber(0) UPSTREAM_QUEUE_LIMIT: string = '100000';
  @Expose() @IsOptional() @IsHeaderName() REQUEST_ID_HEADER?: string;

  @Expose() @IsWholeNumber(1) MAX_CONNECTIONS: string = '100000';
  @Expose() @IsByteSize() MAX_FRAME_BYTES: string = '1MiB';
  @Expose() @IsByteSize() MAX_PAYLOAD_BYTES: string = '10MiB';
  @Expose() @IsByteSize() CLIENT_QUEUE_MAX_BYTES: string = '4MiB';
  @Expose() @IsWholeNumber(1) BATCH_MAX_COMMANDS: string = '1000';
  @Expose() @IsWholeNumber(1) CLIENT_MAX_PENDING_CALLS: string = '100';

  @Expose() @IsDuration() NEW_CONNECTION_IDLE_TIMEOUT: string = '60s';
  @Expose() @IsDuration() CLIENT_MIN_IDLE_TIMEOUT: string = '1s';
  /** Must not be below CLIENT_MIN_IDLE_TIMEOUT (checked by the loader). */
  @Expose() @IsDuration() CLIENT_MAX_IDLE_TIMEOUT: string = '2h';
  @Expose() @IsBooleanText() SESSION_INACTIVE_NOTIFY: string = 'true';

  /** Comma list of exact origins, or `*` for any; unset = same origin as the Host header (SPEC §1). */
  @Expose() @IsOptional() @IsOriginList() ALLOWED_ORIGINS?: string;
  @Expose() @IsDuration() PING_INTERVAL: string = '10s';
  @Expose() @IsDuration(true) SHUTDOWN_GRACE: string = '10s';
  @Expose() @IsOptional() @IsRedisUrl() REDIS_URL?: string;
  /** SPEC §13.4: the partitions' Redis instances; REDIS_URL keeps the control keys and channels. */
  @Expose() @IsOptional() @IsRedisShards() REDIS_SHARDS?: string;
  @Expose() @IsRedisPrefix() REDIS_PREFIX: string = 'gateway:';
  @Expose() @IsDuration() LATTICE_RETENTION: string = '24h';
  /** SPEC §13.1: replicas that must confirm a history publish, lattice update or session record; 0 = none asked. */
  @Expose() @IsWholeNumber(0) REDIS_WAIT_REPLICAS: string = '0';
  @Expose() @IsDuration() REDIS_WAIT_TIMEOUT: string = '100ms';
  /** SPEC §12: `0` turns resumable sessions off. */
  @Expose() @IsDuration(true) RESUME_WINDOW: string = '30s';
  @Expose() @IsWholeNumber(0) TOPIC_HISTORY_SIZE: string = '100';
  /** Must not be below RESUME_WINDOW (checked by the loader). */
  @Expose() @IsDuration() TOPIC_HISTORY_TTL: string = '2m';
  /** SPEC §12.4: payload bytes kept per topic (the oldest messages go first). */
  @Expose() @IsByteSize() TOPIC_HISTORY_MAX_BYTES: string = '1MiB';
  /** SPEC §12.4: one node's whole in-memory history (the oldest messages of the largest histories go first). */
  @Expose() @IsByteSize() HISTORY_MEMORY_MAX_BYTES: string = '256MiB';
  /** SPEC §12.2: detached sessions one user may hold per node; one more ends that user's oldest. */
  @Expose() @IsWholeNumber(1) RESUME_MAX_DETACHED_PER_USER: string = '16';
  /** SPEC §14: an authorization's lifetime when its answer gives no `Gateway-Auth-TTL`; `0` = unlimited. */
  @Expose() @IsDuration(true) AUTHORIZATION_TTL: string = '0';
  /** SPEC §14: caps the header's and AUTHORIZATION_TTL's lifetime alike; `0` = no cap. */
  @Expose() @IsDuration(true) AUTHORIZATION_MAX_TTL: string = '0';
  /** SPEC §14: how long past a lifetime's end a failing refresh is retried before the connection closes. */
  @Expose() @IsDuration(true) AUTHORIZATION_GRACE: string = '30s';
  /** Unset = a random 12-character id. */
  @Expose() @IsOptional() @IsNodeId() NODE_ID?: string;

  @Expose() @IsOneOf(LOG_LEVELS) LOG_LEVEL: string = 'info';
  @Expose() @IsOneOf(LOG_FORMATS) LOG_FORMAT: string = 'json';

  @Expose() @IsHost() HOST: string = '0.0.0.0';
  @Expose() @IsPort() PORT: string = '8080';
  @Expose() @IsHost() BACKEND_API_HOST: string = '127.0.0.1';
  @Expose() @IsPort() BACKEND_API_PORT: string = '8081';
  @Expose() @IsOptional() @IsBearerToken() BACKEND_API_TOKEN?: string;
  /** true = start even though a non-loopback BACKEND_API_HOST has no token (warned at every start). */
  @Expose() @IsBooleanText() BACKEND_API_INSECURE: string = 'false';
  /** Both listeners; HTTP_REQUEST_TIMEOUT must not be below HTTP_HEADERS_TIMEOUT (checked by the loader). */
  @Expose() @IsDuration() HTTP_HEADERS_TIMEOUT: string = '10s';
  @Expose() @IsDuration() HTTP_REQUEST_TIMEOUT: string = '30s';
  @Expose() @IsDuration() HTTP_KEEP_ALIVE_TIMEOUT: string = '5s';

  /** Path of the YAML file; the caller reads it and passes its text to the loader. */
  @Expose() @IsOptional() @IsString() GATEWAY_CONFIG?: string;
}
