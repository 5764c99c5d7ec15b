import { Connection } from '../connections/connection';
import { StatusRegister } from './cluster-statuses';

/**
 * Where this node learns users' statuses (STYLE rule 11), chosen once in the
 * module's factory ({@link statusSourceFor}):
 * - `MemoryStatusSource`: one node, statuses come from this node's activity (SPEC §8);
 * - `RedisStatusSource`: cluster mode, also from the channels of watched users,
 *   read from Redis when a user is first watched here, kept as registers (a
 *   newer version wins) and re-read after a reconnection (SPEC §11).
 */
export abstract class StatusSource {
  /** Users were added to `connection`'s watch list (`newlyWatched`: nobody here watched them before). */
  abstract watched(connection: Connection, userIds: readonly string[], newlyWatched: readonly string[]): Promise<void>;

  /** Nobody here watches these users any more. */
  abstract unwatched(userIds: readonly string[]): void;

  /** A status change of `userId` (from this node's activity, or a user channel). */
  abstract changed(userId: string, register: StatusRegister): void;
}
