import { GONE, Whereabouts } from '../cluster/whereabouts';

/** Sessions a user-wide revocation found held by a node: [connection id, holder]. */
export type HeldRevocations = ReadonlyArray<readonly [connectionId: string, holder: string]>;

const NONE_HELD: HeldRevocations = [];

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
   * there). Rejects when the record cannot be reached (nothing recorded).
   */
  abstract revoke(connectionId: string): Promise<Whereabouts>;

  /** End every recorded session of `userId`; resolves to those a node holds (each holder must end its copy). */
  abstract revokeUser(userId: string): Promise<HeldRevocations>;

  /** SPEC §15.2: the connection ids of the sessions of `userId` that no node holds (their node drained or died). */
  abstract orphanedOf(userId: string): Promise<string[]>;

  /** Endpoint 8 for the sessions of `userId` that no node holds and that watch users (the nodes do the held ones). */
  abstract watchForOrphans(userId: string, userIds: readonly string[]): Promise<void>;
}

/** One node (or no resumable sessions): nothing is recorded beyond the registry. */
export class MemoryUserSessions extends UserSessions {
  revoke(): Promise<Whereabouts> {
    return Promise.resolve(GONE);
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
