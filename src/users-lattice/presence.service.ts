import { Injectable, OnModuleInit } from '@nestjs/common';
import { Broker } from '../cluster/broker';
import { ClusterContext } from '../cluster/cluster-context';
import { SessionMovedError } from '../cluster/session-moved.error';
import { Connection } from '../connections/connection';
import { ConnectionRegistry } from '../connections/connection-registry';
import { GatewayMetrics } from '../metrics/gateway-metrics';
import { encodeLattice } from '../protocol/frames';
import { PresenceStatus, SessionsService } from '../sessions/sessions.service';
import { StatusRegister, parseStatusMessage, readStatuses, redisTimeMs } from './cluster-statuses';

/** The users lattice namespace as clients see it (SPEC §7). */
export const USERS_NAMESPACE = 'gateway.user';

const NEVER_SEEN: StatusRegister = [0, 'offline'];

/**
 * The users lattice `gateway.user` (SPEC §7): per-connection watch lists and
 * status pushes. Statuses come from SessionsService; in cluster mode (SPEC
 * §11) also from the channels of watched users, read from Redis when a user
 * is first watched here, and kept as registers (a newer version wins).
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
  private addForUserElsewhere: ((userId: string, userIds: readonly string[]) => Promise<void>) | null = null;

  constructor(
    private readonly broker: Broker,
    private readonly registry: ConnectionRegistry,
    private readonly sessions: SessionsService,
    metrics: GatewayMetrics,
    private readonly cluster: ClusterContext,
  ) {
    this.framesSent = metrics.framesSent.labels('lattice');
  }

  onModuleInit(): void {
    this.broker.handle<readonly string[]>('users_subscribe', (connectionId, userIds) =>
      this.applySubscribe(connectionId, userIds),
    );
    this.broker.handle<null>('users_unsubscribe', (connectionId) => this.applyUnsubscribe(connectionId));
    // Endpoint 8: the user's connections may be on any node.
    this.broker.handle<readonly string[]>('users_add', (userId, userIds) => this.applyAdd(userId, userIds));
    this.sessions.onStatusChange((userId, status, atMs) => this.onStatus(userId, status, atMs));
    this.broker.listen('u', (userId, payload) => {
      const register = parseStatusMessage(payload);
      if (register !== null) this.onStatus(userId, register[1], register[0]);
    });
    this.cluster.link?.onUp(() => this.rereadWatched());
    this.registry.onRemove((connection) => this.unwatchAll(connection));
  }

  subscribe(connectionId: string, userIds: readonly string[]): Promise<void> {
    return this.broker.toOwner('users_subscribe', connectionId, userIds);
  }

  unsubscribe(connectionId: string): Promise<void> {
    return this.broker.toOwner('users_unsubscribe', connectionId, null);
  }

  addForUser(userId: string, userIds: readonly string[]): Promise<void> {
    const sent = this.broker.toEveryNode('users_add', userId, userIds);
    return this.addForUserElsewhere === null
      ? sent
      : Promise.all([sent, this.addForUserElsewhere(userId, userIds)]).then(() => undefined);
  }

  /** Cluster mode, SPEC §12.2: endpoint 8 also reaches the user's resumable sessions that no node holds (their records). */
  alsoAddForUser(add: (userId: string, userIds: readonly string[]) => Promise<void>): void {
    this.addForUserElsewhere = add;
  }

  /** After hello: the statuses of the whole watch list, when subscribed (SPEC §3). */
  sendSnapshot(connection: Connection): void {
    const watched = this.watchLists.get(connection);
    if (watched !== undefined) this.sendStatuses(connection, watched);
  }

  /** SPEC §12.5: a resumable session's watch list as its session record keeps it; null when not subscribed. */
  watchListOf(connection: Connection): string[] | null {
    const watched = this.watchLists.get(connection);
    return watched === undefined ? null : [...watched];
  }

  /** SPEC §12.5: a session taken over from another node watches its users again (its snapshot follows the resumed hello). */
  async restoreWatch(connection: Connection, userIds: readonly string[]): Promise<void> {
    await this.watch(connection, userIds);
  }

  private async applySubscribe(connectionId: string, userIds: readonly string[]): Promise<void> {
    const connection = this.registry.get(connectionId);
    if (connection === undefined || connection.state === 'closed') return;
    await this.watch(connection, userIds);
    await this.registry.subscriptionsChanged(connection);
  }

  private applyUnsubscribe(connectionId: string): Promise<void> | undefined {
    const connection = this.registry.get(connectionId);
    if (connection === undefined) return;
    this.unwatchAll(connection);
    return this.registry.subscriptionsChanged(connection);
  }

  /** Endpoint 8: only connections of `userId` already subscribed are affected. */
  private async applyAdd(userId: string, userIds: readonly string[]): Promise<void> {
    const subscribed = [...this.registry.ofUser(userId)].filter((connection) => this.watchLists.has(connection));
    await Promise.all(
      subscribed.map(async (connection) => {
        await this.watch(connection, userIds);
        // A session taken over elsewhere meanwhile: that node got this command for every node too.
        await this.registry.subscriptionsChanged(connection)?.catch((err: unknown) => {
          if (!(err instanceof SessionMovedError)) throw err;
        });
      }),
    );
  }

  private watch(connection: Connection, userIds: readonly string[]): Promise<void> | void {
    let watched = this.watchLists.get(connection);
    if (watched === undefined) this.watchLists.set(connection, (watched = new Set()));
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
    if (this.cluster.link !== null && newlyWatched.length > 0)
      return this.watchAcrossCluster(connection, userIds, newlyWatched);
    // Pending connections get the whole list in their snapshot after hello.
    if (connection.isReady) this.sendStatuses(connection, userIds);
  }

  /** Cluster mode: listen to the users' channels first, then read their statuses (nothing is missed between). */
  private async watchAcrossCluster(
    connection: Connection,
    userIds: readonly string[],
    newlyWatched: readonly string[],
  ): Promise<void> {
    await Promise.all(newlyWatched.map((userId) => this.broker.join('u', userId)));
    if (this.cluster.link!.isUp) {
      try {
        const read = await readStatuses(this.cluster.link!, this.cluster.names, newlyWatched);
        for (const [userId, register] of read) this.keepNewer(userId, register);
      } catch {
        // Redis went down meanwhile: statuses come with the next change or after the reconnect.
      }
    }
    if (connection.isReady) this.sendStatuses(connection, userIds);
  }

  private unwatchAll(connection: Connection): void {
    const watched = this.watchLists.get(connection);
    if (watched === undefined) return;
    this.watchLists.delete(connection);
    for (const userId of watched) {
      const set = this.watchers.get(userId);
      set?.delete(connection);
      if (set?.size !== 0) continue;
      this.watchers.delete(userId);
      if (this.cluster.link === null) continue;
      // Cluster mode keeps only watched users' statuses.
      this.broker.leave('u', userId);
      this.statuses.delete(userId);
    }
  }

  /**
   * Cluster mode, after a Redis reconnect: changes published while this node
   * was cut off are lost, so re-read every watched user and push what moved.
   */
  private async rereadWatched(): Promise<void> {
    const userIds = [...this.watchers.keys()];
    if (userIds.length === 0) return;
    // A user Redis no longer holds is offline as of just before this read: a status written after the read
    // (its node re-asserting it) has a version ≥ Redis' time now, so it wins, never ties (SPEC §7).
    const missingVersion = (await redisTimeMs(this.cluster.link!)) - 1;
    const read = await readStatuses(this.cluster.link!, this.cluster.names, userIds, missingVersion);
    for (const [userId, register] of read) this.onStatus(userId, register[1], register[0]);
  }

  /** Cluster mode: a register replaces the known one only when newer; true when it did. */
  private keepNewer(userId: string, register: StatusRegister): boolean {
    const known = this.statuses.get(userId);
    if (known !== undefined && known[0] >= register[0]) return false;
    this.statuses.set(userId, register);
    return true;
  }

  private onStatus(userId: string, status: PresenceStatus, atMs: number): void {
    const register: StatusRegister = [atMs, status];
    if (this.cluster.link !== null) {
      // Only watched users matter here; offline stays stored as a register so an older status cannot win.
      if (!this.watchers.has(userId) || !this.keepNewer(userId, register)) return;
    } else if (status === 'offline') this.statuses.delete(userId);
    else this.statuses.set(userId, register);
    const watching = this.watchers.get(userId);
    if (watching === undefined) return;
    const frame = Buffer.from(encodeLattice(USERS_NAMESPACE, { [userId]: { status_register: register } }));
    let sent = 0;
    for (const connection of watching) if (connection.send(frame)) sent++;
    if (sent > 0) this.framesSent.inc(sent);
  }

  private sendStatuses(connection: Connection, userIds: Iterable<string>): void {
    // Null prototype: a user id may be "__proto__".
    const data: Record<string, { status_register: StatusRegister }> = Object.create(null);
    // [fix] A user the gateway has never seen is offline with version 0 (SPEC §7).
    for (const userId of userIds) data[userId] = { status_register: this.statuses.get(userId) ?? NEVER_SEEN };
    if (connection.send(encodeLattice(USERS_NAMESPACE, data))) this.framesSent.inc();
  }
}
