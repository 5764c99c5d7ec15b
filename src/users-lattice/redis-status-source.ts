import { Broker } from '../cluster/broker';
import { ClusterNames } from '../cluster/channels';
import { RedisLink } from '../cluster/redis-link';
import { RedisShards } from '../cluster/redis-shards';
import { Connection } from '../connections/connection';
import { StatusRegister, readStatuses, redisTimeMs } from './cluster-statuses';
import { StatusSource } from './status-source';
import { WatchLists } from './watch-lists';

/**
 * Cluster mode (SPEC §7, §11): only watched users' statuses are kept, as
 * registers (a newer version wins; offline stays stored so that an older
 * status cannot win).
 */
export class RedisStatusSource extends StatusSource {
  constructor(
    private readonly lists: WatchLists,
    private readonly broker: Broker,
    /** A user's hash lives on its partition's link (SPEC §13.4). */
    private readonly shards: RedisShards,
    private readonly names: ClusterNames,
  ) {
    super();
    for (const link of shards.data) link.onUp(() => this.rereadWatched(link));
  }

  /** Listen to the users' channels first, then read their statuses (nothing is missed between). */
  async watched(connection: Connection, userIds: readonly string[], newlyWatched: readonly string[]): Promise<void> {
    if (newlyWatched.length > 0) {
      await Promise.all(newlyWatched.map((userId) => this.broker.join('u', userId)));
      const readable = newlyWatched.filter((userId) => this.shards.ofName(userId).isUp);
      if (readable.length > 0) {
        try {
          const read = await readStatuses(this.shards, this.names, readable);
          for (const [userId, register] of read) this.keepNewer(userId, register);
        } catch {
          // Redis went down meanwhile: statuses come with the next change or after the reconnect.
        }
      }
    }
    // Pending connections get the whole list in their snapshot after hello.
    if (connection.isReady) this.lists.sendStatuses(connection, userIds);
  }

  unwatched(userIds: readonly string[]): void {
    for (const userId of userIds) {
      this.broker.leave('u', userId);
      this.lists.forgetStatus(userId);
    }
  }

  changed(userId: string, register: StatusRegister): void {
    if (!this.lists.isWatched(userId) || !this.keepNewer(userId, register)) return;
    this.lists.push(userId, register);
  }

  /** After a Redis reconnect: changes published while this node was cut off are lost, so re-read every watched user. */
  private async rereadWatched(link: RedisLink): Promise<void> {
    const userIds = this.lists.watchedUsers().filter((userId) => this.shards.ofName(userId) === link);
    if (userIds.length === 0) return;
    // A user Redis no longer holds is offline as of just before this read: a status written after the read
    // (its node re-asserting it) has a version ≥ Redis' time now, so it wins, never ties (SPEC §7).
    const missingVersion = (await redisTimeMs(link)) - 1;
    const read = await readStatuses(this.shards, this.names, userIds, missingVersion);
    for (const [userId, register] of read) this.changed(userId, register);
  }

  /** A register replaces the known one only when newer; true when it did. */
  private keepNewer(userId: string, register: StatusRegister): boolean {
    const known = this.lists.status(userId);
    if (known !== undefined && known[0] >= register[0]) return false;
    this.lists.setStatus(userId, register);
    return true;
  }
}
