/**
 * SPEC §12.2: a user's detached sessions on this node, in the order they
 * detached, against RESUME_MAX_DETACHED_PER_USER. O(1) per change. Pure;
 * generic over the session type.
 */
export class DetachedPerUser<S> {
  private readonly byUser = new Map<string, Set<S>>();

  constructor(private readonly maxPerUser: number) {}

  /**
   * `session` of `userId` detached. Returns the user's oldest detached
   * session when this makes one more than the bound (the caller ends it, and
   * it is `gone` then), else null.
   */
  detached(userId: string, session: S): S | null {
    let sessions = this.byUser.get(userId);
    if (sessions === undefined) this.byUser.set(userId, (sessions = new Set()));
    sessions.add(session);
    return sessions.size > this.maxPerUser ? sessions.values().next().value! : null;
  }

  /** `session` of `userId` is no longer detached (resumed, ended, handed over); a no-op when it was not (or has no user). */
  gone(userId: string | null, session: S): void {
    if (userId === null) return;
    const sessions = this.byUser.get(userId);
    if (sessions !== undefined && sessions.delete(session) && sessions.size === 0) this.byUser.delete(userId);
  }
}
