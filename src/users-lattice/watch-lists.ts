import { Injectable } from '@nestjs/common';
import { Connection } from '../connections/connection';
import { GatewayMetrics } from '../metrics/gateway-metrics';
import { encodeLattice } from '../protocol/frames';
import { StatusRegister } from './cluster-statuses';

/** The users lattice namespace as clients see it (SPEC §7). */
export const USERS_NAMESPACE = 'gateway.user';

const NEVER_SEEN: StatusRegister = [0, 'offline'];

/**
 * This node's side of the users lattice (SPEC §7): who watches whom, the
 * last known status of users seen here, and the status frames. Shared by
 * {@link PresenceService} and the status source of the mode the gateway runs in.
 */
@Injectable()
export class WatchLists {
  /** Last known status of users seen on this node. */
  private readonly statuses = new Map<string, StatusRegister>();
  /** Subscribed connection → watched users. */
  private readonly lists = new Map<Connection, Set<string>>();
  /** Watched user → subscribed connections watching it. */
  private readonly watchers = new Map<string, Set<Connection>>();
  private readonly framesSent;

  constructor(metrics: GatewayMetrics) {
    this.framesSent = metrics.framesSent.labels('lattice');
  }

  /** The connection's watch list; undefined when it is not subscribed. */
  listOf(connection: Connection): ReadonlySet<string> | undefined {
    return this.lists.get(connection);
  }

  isWatched(userId: string): boolean {
    return this.watchers.has(userId);
  }

  watchedUsers(): string[] {
    return [...this.watchers.keys()];
  }

  /** Add users to the connection's list (subscribing it); returns those nobody here watched before. */
  add(connection: Connection, userIds: readonly string[]): string[] {
    let watched = this.lists.get(connection);
    if (watched === undefined) this.lists.set(connection, (watched = new Set()));
    const newlyWatched: string[] = [];
    for (const userId of userIds) {
      watched.add(userId);
      let set = this.watchers.get(userId);
      if (set === undefined) {
        this.watchers.set(userId, (set = new Set()));
        newlyWatched.push(userId);
      }
      set.add(connection);
    }
    return newlyWatched;
  }

  /** Unsubscribe the connection; returns the users nobody here watches any more. */
  remove(connection: Connection): string[] {
    const watched = this.lists.get(connection);
    if (watched === undefined) return [];
    this.lists.delete(connection);
    const unwatched: string[] = [];
    for (const userId of watched) {
      const set = this.watchers.get(userId);
      set?.delete(connection);
      if (set?.size !== 0) continue;
      this.watchers.delete(userId);
      unwatched.push(userId);
    }
    return unwatched;
  }

  status(userId: string): StatusRegister | undefined {
    return this.statuses.get(userId);
  }

  setStatus(userId: string, register: StatusRegister): void {
    this.statuses.set(userId, register);
  }

  forgetStatus(userId: string): void {
    this.statuses.delete(userId);
  }

  /** A user's new status to every connection watching it here. */
  push(userId: string, register: StatusRegister): void {
    const watching = this.watchers.get(userId);
    if (watching === undefined) return;
    const frame = Buffer.from(encodeLattice(USERS_NAMESPACE, { [userId]: { status_register: register } }));
    let sent = 0;
    for (const connection of watching) if (connection.send(frame)) sent++;
    if (sent > 0) this.framesSent.inc(sent);
  }

  /** The statuses of `userIds` in one frame. */
  sendStatuses(connection: Connection, userIds: Iterable<string>): void {
    // Null prototype: a user id may be "__proto__".
    const data: Record<string, { status_register: StatusRegister }> = Object.create(null);
    // [fix] A user the gateway has never seen is offline with version 0 (SPEC §7).
    for (const userId of userIds) data[userId] = { status_register: this.statuses.get(userId) ?? NEVER_SEEN };
    if (connection.send(encodeLattice(USERS_NAMESPACE, data))) this.framesSent.inc();
  }
}
