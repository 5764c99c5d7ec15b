import { GONE, Whereabouts } from '../cluster/whereabouts';

/**
 * A session revoked where it is recorded (SPEC §12.6): where it was, and the
 * nodes it was taken over from that may still hold a copy (their takeover
 * notice may still be on its way): each of them must end its copy too.
 */
export interface Revocation {
  readonly where: Whereabouts;
  readonly previousHolders: readonly string[];
}

/** Sessions a user-wide revocation found on nodes: [connection id, the nodes that must end a copy of it]. */
export type HeldRevocations = ReadonlyArray<readonly [connectionId: string, nodes: readonly string[]]>;

const NONE_HELD: HeldRevocations = [];
const NOT_RECORDED: Revocation = Object.freeze({ where: GONE, previousHolders: [] });

/**
 * What is known of a user's resumable sessions beyond this node's memory
 * (SPEC §12.2, §12.6): on one node nothing (its sessions are in its
 * registry, and a DELETE reaches them there), in cluster mode their records in
 * Redis ({@link RedisUserSessions}). Chosen once, in ResumeModule.
 */
export abstract class UserSessions {
  /**
   * End the session `connectionId` where it is recorded, whichever node holds
   * it: from then on no takeover of it succeeds. Resolves to where it was:
   * held by the node that must end its copy, orphaned (it ended in its record
   * alone), or gone (no record: the node its id names ends it, if it is
   * there); and to the nodes it was taken from that must end theirs. Rejects
   * when the record cannot be reached (nothing recorded).
   */
  abstract revoke(connectionId: string): Promise<Revocation>;

  /** End every recorded session of `userId`; resolves to those a node may hold a copy of (each must end it). */
  abstract revokeUser(userId: string): Promise<HeldRevocations>;

  /** SPEC §15.2: the connection ids of the sessions of `userId` that no node holds (their node drained or died). */
  abstract orphanedOf(userId: string): Promise<string[]>;

  /** Endpoint 8 for the sessions of `userId` that no node holds and that watch users (the nodes do the held ones). */
  abstract watchForOrphans(userId: string, userIds: readonly string[]): Promise<void>;
}

/** One node (or no resumable sessions): nothing is recorded beyond the registry. */
export class MemoryUserSessions extends UserSessions {
  revoke(): Promise<Revocation> {
    return Promise.resolve(NOT_RECORDED);
  }

  revokeUser(): Promise<HeldRevocations> {
    return Promise.resolve(NONE_HELD);
  }

  orphanedOf(): Promise<string[]> {
    return Promise.resolve([]);
  }

  watchForOrphans(): Promise<void> {
    return Promise.resolve();
  }
}
