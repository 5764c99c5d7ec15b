import { Connection } from '../connections/connection';
import { StatusRegister } from './cluster-statuses';
import { StatusSource } from './status-source';
import { WatchLists } from './watch-lists';

const RESOLVED = Promise.resolve();

/** One node: every status is this node's own, and known at once. */
export class MemoryStatusSource extends StatusSource {
  constructor(private readonly lists: WatchLists) {
    super();
  }

  watched(connection: Connection, userIds: readonly string[]): Promise<void> {
    // Pending connections get the whole list in their snapshot after hello.
    if (connection.isReady) this.lists.sendStatuses(connection, userIds);
    return RESOLVED;
  }

  unwatched(): void {}

  changed(userId: string, register: StatusRegister): void {
    if (register[1] === 'offline') this.lists.forgetStatus(userId);
    else this.lists.setStatus(userId, register);
    this.lists.push(userId, register);
  }
}
