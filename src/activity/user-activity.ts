import { Connection } from '../connections/connection';
import { Identity } from '../protocol/identity';

/** A user's presence status (SPEC §7). */
export type PresenceStatus = 'active' | 'inactive' | 'offline';

/** What activity tells the rest of the gateway: status changes (with their version) and inactivity notices due. */
export interface ActivityEvents {
  /** `atMs`: the status register's version (epoch ms; Redis time in cluster mode). */
  announce(userId: string, status: PresenceStatus, atMs: number): void;
  /** One `session_inactive` to send for the user (identity header value, handler name). */
  inactive(userId: string, authorization: string, handlerName: string): void;
}

/**
 * SPEC §8 activity: one deadline per user, shared by its connections, and
 * the status it makes (STYLE rule 11), chosen once in the module's factory
 * ({@link userActivityFor}):
 * - `MemoryActivity`: one node, deadlines in a queue here;
 * - `RedisActivity`: cluster mode, counts, deadlines and statuses in Redis (SPEC §11).
 */
export abstract class UserActivity {
  /** A connection was authorized: the user is active for `windowMs` at least. Resolves once counted. */
  abstract authorized(identity: Identity, handlerName: string, windowMs: number): Promise<void> | void;

  /** The user's status as this node keeps it (one node); null when it has none here or the cluster keeps it (Redis). */
  abstract statusOf(userId: string): PresenceStatus | null;

  /** A valid call carried `active`: the deadline moves to at least now + `windowMs`. */
  abstract touch(userId: string, windowMs: number): void;

  /** SPEC §14: a refresh changed the user's authorization object; its `session_inactive` carries `identity`. */
  abstract refreshed(identity: Identity): void;

  /** SPEC §12.5: a session taken over from another node; `deadlineAt` is the user's deadline there. */
  abstract adopted(identity: Identity, handlerName: string, deadlineAt: number): void;

  /** A connection here closed (or was handed over to another node). */
  abstract connectionGone(connection: Connection): void;

  /** Timers stopped; cluster mode withdraws this node's presence (SPEC §11 "Drain"). */
  abstract stop(): Promise<void>;
}
