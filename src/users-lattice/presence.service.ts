import { Injectable, OnModuleInit } from '@nestjs/common';
import { Broker } from '../cluster/broker';
import type { Applied } from '../cluster/whereabouts';
import { Connection } from '../connections/connection';
import { ConnectionRegistry } from '../connections/connection-registry';
import { ActivityService } from '../activity/activity.service';
import { SessionParts } from '../resume/session-parts';
import { UserSessions } from '../resume/user-sessions';
import { RecordField } from '../resume/session-record';
import { parseStatusMessage } from './cluster-statuses';
import { StatusSource } from './status-source';
import { WatchLists } from './watch-lists';

/**
 * The users lattice `gateway.user` (SPEC §7): per-connection watch lists
 * ({@link WatchLists}) and status pushes. Statuses come from ActivityService
 * and, in cluster mode, from Redis: the {@link StatusSource} of the mode.
 */
@Injectable()
export class PresenceService implements OnModuleInit {
  constructor(
    private readonly broker: Broker,
    private readonly registry: ConnectionRegistry,
    private readonly activity: ActivityService,
    private readonly lists: WatchLists,
    private readonly source: StatusSource,
    private readonly sessionParts: SessionParts,
    private readonly userSessions: UserSessions,
  ) {}

  onModuleInit(): void {
    this.broker.handle<readonly string[]>('users_subscribe', (connectionId, userIds) =>
      this.applySubscribe(connectionId, userIds),
    );
    this.broker.handle<null>('users_unsubscribe', (connectionId) => this.applyUnsubscribe(connectionId));
    // Endpoint 8: the user's connections may be on any node.
    this.broker.handle<readonly string[]>('users_add', (userId, userIds) => this.applyAdd(userId, userIds));
    this.sessionParts.register('watch', {
      read: (connection) => this.watchListOf(connection),
      // Watching its users again; the snapshot follows the resumed hello.
      restore: async (connection, userIds) => {
        if (userIds !== null) await this.watch(connection, userIds);
      },
      orphanEdits: {
        users_subscribe: (userIds) => ({ op: 'watch', users: userIds as readonly string[] }),
        users_unsubscribe: () => ({ op: 'del', field: RecordField.watch }),
      },
    });
    this.activity.onStatusChange((userId, status, atMs) => this.source.changed(userId, [atMs, status]));
    this.broker.listen('u', (userId, payload) => {
      const register = parseStatusMessage(payload);
      if (register !== null) this.source.changed(userId, register);
    });
    this.registry.onRemove((connection) => this.unwatchAll(connection));
  }

  subscribe(connectionId: string, userIds: readonly string[]): Promise<void> {
    return this.broker.toOwner('users_subscribe', connectionId, userIds);
  }

  unsubscribe(connectionId: string): Promise<void> {
    return this.broker.toOwner('users_unsubscribe', connectionId, null);
  }

  addForUser(userId: string, userIds: readonly string[]): Promise<void> {
    // SPEC §12.2: also the user's resumable sessions that no node holds (their records, cluster mode).
    const sent = this.broker.toEveryNode('users_add', userId, userIds);
    return Promise.all([sent, this.userSessions.watchForOrphans(userId, userIds)]).then(() => undefined);
  }

  /** After hello: the statuses of the whole watch list, when subscribed (SPEC §3). */
  sendSnapshot(connection: Connection): void {
    const watched = this.lists.listOf(connection);
    if (watched !== undefined) this.lists.sendStatuses(connection, watched);
  }

  /** A connection's watch list (SPEC §12.5 keeps it in the session record, §15.2 answers it); null when not subscribed. */
  watchListOf(connection: Connection): string[] | null {
    const watched = this.lists.listOf(connection);
    return watched === undefined ? null : [...watched];
  }

  private async applySubscribe(connectionId: string, userIds: readonly string[]): Applied {
    const connection = this.registry.get(connectionId);
    if (connection === undefined || connection.state === 'closed') return;
    await this.watch(connection, userIds);
    return this.registry.subscriptionsChanged(connection);
  }

  private applyUnsubscribe(connectionId: string): Applied | undefined {
    const connection = this.registry.get(connectionId);
    if (connection === undefined) return;
    this.unwatchAll(connection);
    return this.registry.subscriptionsChanged(connection);
  }

  /** Endpoint 8: only connections of `userId` already subscribed are affected. */
  private async applyAdd(userId: string, userIds: readonly string[]): Promise<void> {
    const subscribed = [...this.registry.ofUser(userId)].filter(
      (connection) => this.lists.listOf(connection) !== undefined,
    );
    await Promise.all(
      subscribed.map(async (connection) => {
        await this.watch(connection, userIds);
        // A session taken over elsewhere meanwhile (Moved): that node got this command for every node too.
        await this.registry.subscriptionsChanged(connection);
      }),
    );
  }

  private watch(connection: Connection, userIds: readonly string[]): Promise<void> {
    return this.source.watched(connection, userIds, this.lists.add(connection, userIds));
  }

  private unwatchAll(connection: Connection): void {
    this.source.unwatched(this.lists.remove(connection));
  }
}
