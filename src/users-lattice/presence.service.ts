import { Injectable, OnModuleInit } from '@nestjs/common';
import { Broker } from '../cluster/broker';
import { Connection } from '../connections/connection';
import { ConnectionRegistry } from '../connections/connection-registry';
import { GatewayMetrics } from '../metrics/gateway-metrics';
import { encodeLattice } from '../protocol/frames';
import { PresenceStatus, SessionsService } from '../sessions/sessions.service';

/** The users lattice namespace as clients see it (SPEC §7). */
export const USERS_NAMESPACE = 'gateway.user';

type StatusRegister = readonly [atMs: number, status: PresenceStatus];

/**
 * The users lattice `gateway.user` (SPEC §7): per-connection watch lists and
 * status pushes. Statuses come from SessionsService.
 */
@Injectable()
export class PresenceService implements OnModuleInit {
  /** Last known status of every user seen on this node. */
  private readonly statuses = new Map<string, StatusRegister>();
  /** Subscribed connection → watched users. */
  private readonly watchLists = new Map<Connection, Set<string>>();
  /** Watched user → subscribed connections watching it. */
  private readonly watchers = new Map<string, Set<Connection>>();
  private readonly framesSent;

  constructor(
    private readonly broker: Broker,
    private readonly registry: ConnectionRegistry,
    private readonly sessions: SessionsService,
    metrics: GatewayMetrics,
  ) {
    this.framesSent = metrics.framesSent.labels('lattice');
  }

  onModuleInit(): void {
    this.broker.handle<readonly string[]>('users_subscribe', (connectionId, userIds) => this.applySubscribe(connectionId, userIds));
    this.broker.handle<null>('users_unsubscribe', (connectionId) => this.applyUnsubscribe(connectionId));
    // Endpoint 8: the user's connections may be on any node.
    this.broker.handle<readonly string[]>('users_add', (userId, userIds) => this.applyAdd(userId, userIds));
    this.sessions.onStatusChange((userId, status, atMs) => this.onStatus(userId, status, atMs));
    this.registry.onRemove((connection) => this.unwatchAll(connection));
  }

  subscribe(connectionId: string, userIds: readonly string[]): Promise<void> {
    return this.broker.toOwner('users_subscribe', connectionId, userIds);
  }

  unsubscribe(connectionId: string): Promise<void> {
    return this.broker.toOwner('users_unsubscribe', connectionId, null);
  }

  addForUser(userId: string, userIds: readonly string[]): Promise<void> {
    return this.broker.toEveryNode('users_add', userId, userIds);
  }

  /** After hello: the statuses of the whole watch list, when subscribed (SPEC §3). */
  sendSnapshot(connection: Connection): void {
    const watched = this.watchLists.get(connection);
    if (watched !== undefined) this.sendStatuses(connection, watched);
  }

  private applySubscribe(connectionId: string, userIds: readonly string[]): void {
    const connection = this.registry.get(connectionId);
    if (connection === undefined || connection.state === 'closed') return;
    this.watch(connection, userIds);
  }

  private applyUnsubscribe(connectionId: string): void {
    const connection = this.registry.get(connectionId);
    if (connection !== undefined) this.unwatchAll(connection);
  }

  /** Endpoint 8: only connections of `userId` already subscribed are affected. */
  private applyAdd(userId: string, userIds: readonly string[]): void {
    for (const connection of this.registry.ofUser(userId)) {
      if (this.watchLists.has(connection)) this.watch(connection, userIds);
    }
  }

  private watch(connection: Connection, userIds: readonly string[]): void {
    let watched = this.watchLists.get(connection);
    if (watched === undefined) this.watchLists.set(connection, (watched = new Set()));
    for (const userId of userIds) {
      watched.add(userId);
      let set = this.watchers.get(userId);
      if (set === undefined) this.watchers.set(userId, (set = new Set()));
      set.add(connection);
    }
    // Pending connections get the whole list in their snapshot after hello.
    if (connection.isReady) this.sendStatuses(connection, userIds);
  }

  private unwatchAll(connection: Connection): void {
    const watched = this.watchLists.get(connection);
    if (watched === undefined) return;
    this.watchLists.delete(connection);
    for (const userId of watched) {
      const set = this.watchers.get(userId);
      set?.delete(connection);
      if (set?.size === 0) this.watchers.delete(userId);
    }
  }

  private onStatus(userId: string, status: PresenceStatus, atMs: number): void {
    const register: StatusRegister = [atMs, status];
    if (status === 'offline') this.statuses.delete(userId);
    else this.statuses.set(userId, register);
    const watching = this.watchers.get(userId);
    if (watching === undefined) return;
    const frame = Buffer.from(encodeLattice(USERS_NAMESPACE, { [userId]: { status_register: register } }));
    let sent = 0;
    for (const connection of watching) if (connection.send(frame)) sent++;
    if (sent > 0) this.framesSent.inc(sent);
  }

  private sendStatuses(connection: Connection, userIds: Iterable<string>): void {
    const now = Date.now();
    // Null prototype: a user id may be "__proto__".
    const data: Record<string, { status_register: StatusRegister }> = Object.create(null);
    // A user the gateway has never seen is offline with the current time (SPEC §7).
    for (const userId of userIds) data[userId] = { status_register: this.statuses.get(userId) ?? [now, 'offline'] };
    if (connection.send(encodeLattice(USERS_NAMESPACE, data))) this.framesSent.inc();
  }
}
