import { Connection } from '../connections/connection';
import type { Applied } from '../cluster/whereabouts';
import { LatticeBody } from './lattice-body';

/**
 * How lattice updates reach this node's copy (STYLE rule 11), chosen once in
 * the module's factory ({@link latticeSyncFor}):
 * - `MemoryLatticeSync`: one node, an update is merged here at once;
 * - `RedisLatticeSync`: cluster mode, every update goes through the
 *   namespace's log in Redis, and this node applies the log, in order, for
 *   the namespaces it holds (SPEC §11, §13.1).
 */
export abstract class LatticeSync {
  /** The entries of a user with no connection here are kept (the copy must equal the shared log). */
  abstract readonly isKeepingUsers: boolean;

  /** Endpoint 6: merged everywhere the namespace is held; resolves once it is in the shared state. */
  abstract update(namespace: string, body: LatticeBody): Promise<void>;

  /** Endpoint 4 on the owner node: the body merged, `connection` attached, its snapshot sent when ready. */
  abstract subscribe(connection: Connection, namespace: string, body: LatticeBody): Applied | void;

  /** SPEC §12.5: a session taken over attached again to a namespace, its state loaded first. */
  abstract restore(connection: Connection, namespace: string): Promise<void>;

  /** A message on a namespace's channel, from another node. */
  abstract received(namespace: string, payload: Buffer): void;

  /** No connection here is attached to the namespace any more. */
  abstract released(namespace: string): void;

  /** Timers stopped (app shutdown). */
  abstract stop(): void;
}
