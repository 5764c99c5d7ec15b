import { ClusterNames, partitionOf, sessionMember } from '../cluster/channels';
import { RedisShards } from '../cluster/redis-shards';
import { GONE, whereaboutsOf } from '../cluster/whereabouts';
import { SCRIPT_ORIGIN } from './session-record-scripts';
import { REVOKE, REVOKE_USER, WATCH_USER_ORPHANS } from './user-session-scripts';
import { HeldRevocations, Revocation, UserSessions } from './user-sessions';

/** A script over a user's sessions set read just before answers 'retry' when it changed in between: this many tries. */
const USER_SET_TRIES = 5;

type Script = (keys: readonly string[], args: readonly (string | number | Buffer)[]) => Promise<unknown>;

/**
 * One user's resumable sessions in Redis (cluster mode), found through the
 * user's index (`ClusterNames.userSessions`), never by a scan of the cluster's
 * sessions (SPEC §12.2): revoking one session or all of a user's (SPEC §12.6),
 * and endpoint 8 for the user's sessions no node holds.
 */
export class RedisUserSessions extends UserSessions {
  private readonly revokeScript: Script;
  /** Scripts whose KEYS count varies (one record per session of the user). */
  private readonly revokeUserScript: Script;
  private readonly watchOrphansScript: Script;

  constructor(
    /** A user's sessions live on its partition's link; the connection index on the connection id's (SPEC §13.4). */
    private readonly shards: RedisShards,
    private readonly names: ClusterNames,
  ) {
    super();
    this.revokeScript = shards.script('gatewaySessionRevoke', 6, REVOKE);
    this.revokeUserScript = shards.script('gatewaySessionRevokeUser', null, REVOKE_USER);
    this.watchOrphansScript = shards.script('gatewaySessionWatchUserOrphans', null, WATCH_USER_ORPHANS);
  }

  /**
   * End the session `connectionId` in Redis, whichever node holds it: from
   * now on no takeover of it succeeds, and its holder cannot write it again.
   * Resolves to where the session was: held by the node that must end its
   * copy, orphaned (it ended in Redis alone), or gone (Redis has no record: a
   * legacy or still pending connection, or none); and to the nodes it was
   * taken from that must end theirs. Rejects when Redis cannot be reached
   * (nothing was recorded).
   */
  override async revoke(connectionId: string): Promise<Revocation> {
    const index = this.shards.ofName(connectionId);
    const userId = await index.timed('get', index.command.get(this.names.sessionUser(connectionId)));
    if (userId === null || userId === '') return { where: GONE, previousHolders: [] };
    const keys = [this.names.session(userId, connectionId), this.names.userSessions(userId), ...this.userKeys(userId)];
    const args = [connectionId, sessionMember(connectionId, userId), SCRIPT_ORIGIN];
    const [holder, ...previousHolders] = (await this.revokeScript(keys, args)) as string[];
    return { where: whereaboutsOf(holder), previousHolders };
  }

  /**
   * End every session of `userId` that Redis has a record of (held anywhere
   * or by no node). Returns those a node may still hold a copy of (its
   * holder, or a node it was taken from): each such node must end its copy.
   * Rejects when Redis cannot be reached.
   */
  override async revokeUser(userId: string): Promise<HeldRevocations> {
    const replies = (await this.overSessionsOf(
      userId,
      this.revokeUserScript,
      this.userKeys(userId),
      [SCRIPT_ORIGIN],
      (ids) => ids.map((id) => sessionMember(id, userId)),
    )) as string[][];
    return replies.map(([connectionId, holder, ...previousHolders]) => [
      connectionId,
      holder === '' ? previousHolders : [holder, ...previousHolders],
    ]);
  }

  /** SPEC §15.2: the connection ids of the sessions of `userId` that no node holds (their node drained or died). */
  override async orphanedOf(userId: string): Promise<string[]> {
    const link = this.shards.ofName(userId);
    const ids = await link.timed('smembers', link.command.smembers(this.names.userSessions(userId)));
    if (ids.length === 0) return [];
    const holders =
      (await link.timed(
        'hget',
        link.command.pipeline(ids.map((id) => ['hget', this.names.session(userId, id), 'n'])).exec(),
      )) ?? [];
    return ids.filter((_, i) => holders[i]?.[1] === '');
  }

  /** Endpoint 8 for the sessions of `userId` that no node holds and that watch users (the nodes do the held ones). */
  override async watchForOrphans(userId: string, userIds: readonly string[]): Promise<void> {
    await this.overSessionsOf(userId, this.watchOrphansScript, [], [JSON.stringify(userIds)]);
  }

  /** The user hash, then the partition's orphans, deadlines and status floor. */
  private userKeys(userId: string): string[] {
    const partition = partitionOf(userId);
    return [
      this.names.user(userId),
      this.names.orphanSessions(partition),
      this.names.deadlines(partition),
      this.names.statusFloor(partition),
    ];
  }

  /**
   * Run `script` over the sessions of `userId`: their ids are read from
   * the user's set, then the script gets the set, `keys` and each record as
   * KEYS (every key it touches), `args`, the ids, then `more(ids)` as ARGV;
   * it answers 'retry' when the set changed in between. Two round trips;
   * one when Redis has no session of the user.
   */
  private async overSessionsOf(
    userId: string,
    script: Script,
    keys: readonly string[],
    args: readonly string[],
    more: (ids: readonly string[]) => readonly string[] = () => [],
  ): Promise<unknown> {
    const set = this.names.userSessions(userId);
    const link = this.shards.ofName(userId);
    for (let tries = 0; tries < USER_SET_TRIES; tries++) {
      const ids = await link.timed('smembers', link.command.smembers(set));
      if (ids.length === 0) return [];
      const allKeys = [set, ...keys, ...ids.map((id) => this.names.session(userId, id))];
      const reply = await script(allKeys, [...args, ...ids, ...more(ids)]);
      if (reply !== 'retry') return reply;
    }
    throw new Error(`the sessions of a user kept changing (${USER_SET_TRIES} reads)`);
  }
}
