import { Logger } from '@nestjs/common';
import { ClusterNames, parseSessionMember, partitionOf, sessionMember } from '../cluster/channels';
import { PartitionWalk } from '../cluster/partition-walk';
import { RedisShards } from '../cluster/redis-shards';
import { GONE, ORPHANED, Whereabouts, whereaboutsOf } from '../cluster/whereabouts';
import { TopicPosition } from '../protocol/topic-position';
import {
  HeldSession,
  OrphanEdit,
  OrphanedSession,
  SessionStart,
  SessionSubscriptions,
  TakeoverResult,
  decodeRecordedPosition,
} from './session-record';
import {
  EDIT_ORPHAN,
  END_ORPHAN,
  ENDED,
  ORPHAN,
  ORPHAN_BATCH,
  ORPHAN_POLL_MS,
  RELEASED,
  SCRIPT_ORIGIN,
  TAKEOVER,
} from './session-record-scripts';
import { ATTACHED_TTL_MS, SessionRecordWriter } from './session-record-writer';

type Script = (keys: readonly string[], args: readonly (string | number | Buffer)[]) => Promise<unknown>;

/**
 * The Redis side of resumable sessions (SPEC §12.5, docs/cluster.md
 * "Resumable sessions"): the records this node writes ({@link writer}); the
 * takeover script; where a session is; node death and drain; commands for,
 * and the end of, sessions held by no node. Tokens never reach Redis, only
 * their digests.
 */
export class SessionRecords {
  private readonly logger = new Logger(SessionRecords.name);
  /** The records of the sessions this node holds. */
  readonly writer: SessionRecordWriter;
  private readonly takeoverScript: Script;
  private readonly orphanScript: Script;
  private readonly endOrphanScript: Script;
  private readonly editOrphanScript: Script;
  private readonly endedScript: Script;
  private readonly releasedScript: Script;
  private readonly walk: PartitionWalk;
  private orphanTimer: NodeJS.Timeout | null = null;
  private isStopped = false;

  constructor(
    /** A session's keys live on its user's partition's link; its connection index on the connection id's (SPEC §13.4). */
    private readonly shards: RedisShards,
    private readonly names: ClusterNames,
    private readonly nodeId: string,
    windowMs: number,
    held: () => Iterable<HeldSession>,
    restart: () => Iterable<[SessionStart, SessionSubscriptions]> = () => [],
  ) {
    this.writer = new SessionRecordWriter(shards, names, nodeId, windowMs, held, restart);
    this.takeoverScript = shards.script('gatewaySessionTakeover', 9, TAKEOVER);
    this.orphanScript = shards.script('gatewaySessionOrphan', 5, ORPHAN);
    this.endOrphanScript = shards.script('gatewaySessionEndOrphan', 7, END_ORPHAN);
    this.editOrphanScript = shards.script('gatewaySessionEditOrphan', 1, EDIT_ORPHAN);
    this.endedScript = shards.script('gatewaySessionEnded', 4, ENDED);
    this.releasedScript = shards.script('gatewaySessionReleased', 3, RELEASED);
    this.walk = new PartitionWalk(shards);
    this.scheduleOrphanPoll();
  }

  /** This node drained: its sessions are held by no node now (their records take the commands). */
  get hasLetGo(): boolean {
    return this.isStopped;
  }

  /**
   * The connection of a session this node holds closed for good: its record
   * becomes its end mark. Resolves to whether its connection leaves here
   * (false when another node took it over, or a reaper orphaned it).
   */
  async ended(connectionId: string, userId: string): Promise<boolean> {
    const partition = partitionOf(userId);
    const keys = [
      this.names.session(userId, connectionId),
      this.names.endedTokens(partition),
      this.names.nodeSessions(partition, this.nodeId),
      this.names.userSessions(userId),
    ];
    const args = [this.nodeId, connectionId, sessionMember(connectionId, userId)];
    return (await this.endedScript(keys, args)) === 1;
  }

  /**
   * This node's copy of a session another node took over (or held when it was
   * revoked) is gone: the session leaves this node's set (the takeover moved
   * the rest), and a revocation no longer waits for this node (SPEC §12.6).
   * Not awaited: unwritten, a revocation asks this node once more for nothing.
   */
  released(connectionId: string, userId: string): void {
    const keys = [
      this.names.session(userId, connectionId),
      this.names.nodeSessions(partitionOf(userId), this.nodeId),
      this.names.userSessions(userId),
    ];
    this.releasedScript(keys, [this.nodeId, sessionMember(connectionId, userId), connectionId]).catch(() => undefined);
  }

  /**
   * SPEC §12.3/12.5: take the session `connectionId` (as the token names it,
   * unverified) of the token `digest` over, or say why not. The session's
   * user, hence the partition of its record, comes from the connection
   * index first.
   */
  async takeOver(
    connectionId: string,
    digest: string,
    handlerName: string,
    newDigest: string,
  ): Promise<TakeoverResult> {
    const userId = await this.userOfRecord(connectionId);
    if (userId === null) return { ok: false, result: 'invalid' };
    const partition = partitionOf(userId);
    const keys = [
      this.names.sessionToken(userId, digest),
      this.names.session(userId, connectionId),
      this.names.sessionToken(userId, newDigest),
      this.names.user(userId),
      this.names.nodeUsers(partition, this.nodeId),
      this.names.nodeSessions(partition, this.nodeId),
      this.names.orphanSessions(partition),
      this.names.deadlines(partition),
      this.names.endedTokens(partition),
    ];
    const args = [
      digest,
      handlerName,
      this.nodeId,
      newDigest,
      ATTACHED_TTL_MS,
      connectionId,
      userId,
      sessionMember(connectionId, userId),
    ];
    const reply = (await this.takeoverScript(keys, args)) as [string, string?, string?, number?, string?, string[]?];
    if (reply[0] !== 'ok') return { ok: false, result: reply[0] === 'expired' ? 'expired' : 'invalid' };
    const [, , previousHolder, generation, deadline, flat] = reply as [
      string,
      string,
      string,
      number,
      string,
      string[],
    ];
    const fields = new Map<string, string>();
    for (let i = 0; i < flat.length; i += 2) fields.set(flat[i], flat[i + 1]);
    const topics = new Map<string, TopicPosition>();
    const namespaces: string[] = [];
    for (const [field, value] of fields) {
      if (field.startsWith('t:')) topics.set(field.slice(2), decodeRecordedPosition(value));
      else if (field.startsWith('l:')) namespaces.push(field.slice(2));
    }
    const watch = fields.get('wu');
    return {
      ok: true,
      record: {
        connectionId,
        userId: fields.get('u')!,
        authJson: fields.get('a')!,
        handlerName: fields.get('h')!,
        generation: Number(generation),
        deadlineAt: Number(deadline),
        previousHolder,
        authEndsAt: Number(fields.get('ae') ?? 0),
        topics,
        namespaces,
        watch: watch === undefined ? null : (JSON.parse(watch) as string[]),
      },
    };
  }

  /**
   * SPEC §15.2: a session held by no node (its node drained or died, not
   * resumed yet) as a query shows it; null when a node holds it or there is
   * no such session.
   */
  async orphaned(connectionId: string): Promise<OrphanedSession | null> {
    const userId = await this.userOfRecord(connectionId);
    if (userId === null) return null;
    const key = this.names.session(userId, connectionId);
    const link = this.shards.forKey(key);
    const record = await link.timed('hgetall', link.command.hgetall(key));
    if (record.n !== '' || record.u === undefined) return null;
    const fields = Object.keys(record);
    return {
      connectionId,
      userId: record.u,
      topics: fields.filter((field) => field.startsWith('t:')).map((field) => field.slice(2)),
      namespaces: fields.filter((field) => field.startsWith('l:')).map((field) => field.slice(2)),
      isWatching: record.wu !== undefined,
    };
  }

  /** Where a session is, as its record says. */
  async whereIs(connectionId: string): Promise<Whereabouts> {
    const userId = await this.userOfRecord(connectionId);
    if (userId === null) return GONE;
    const key = this.names.session(userId, connectionId);
    return whereaboutsOf(await this.shards.forKey(key).command.hget(key, 'n'));
  }

  /** The user of the session `connectionId` as the connection index has it; null when Redis knows no such session. */
  private async userOfRecord(connectionId: string): Promise<string | null> {
    const key = this.names.sessionUser(connectionId);
    const link = this.shards.forKey(key);
    const userId = await link.timed('get', link.command.get(key));
    return userId === '' ? null : userId;
  }

  /**
   * End the orphaned session `connectionId` of `userId` (its window ended:
   * `whenDue`, or a /v1 disconnect). Resolves to whether it ended here.
   */
  private async endOrphan(connectionId: string, userId: string, whenDue: boolean): Promise<boolean> {
    const partition = partitionOf(userId);
    const keys = [
      this.names.session(userId, connectionId),
      this.names.orphanSessions(partition),
      this.names.userSessions(userId),
      this.names.user(userId),
      this.names.deadlines(partition),
      this.names.statusFloor(partition),
      this.names.endedTokens(partition),
    ];
    const args = [sessionMember(connectionId, userId), connectionId, userId, SCRIPT_ORIGIN, whenDue ? '1' : '0'];
    return (await this.endOrphanScript(keys, args)) === 1;
  }

  /**
   * Apply `edit` to the record of a session held by no node. Resolves to
   * where the session is: held by a node (nothing applied: the command
   * belongs there), orphaned (applied), or gone (no such session).
   */
  async editOrphan(connectionId: string, edit: OrphanEdit): Promise<Whereabouts> {
    const field = edit.op === 'set' || edit.op === 'add' || edit.op === 'del' ? edit.field : '';
    const value =
      edit.op === 'set' || edit.op === 'add' ? edit.value : edit.op === 'watch' ? JSON.stringify(edit.users) : '';
    const userId = await this.userOfRecord(connectionId);
    if (userId === null) return GONE;
    const key = this.names.session(userId, connectionId);
    if (edit.op !== 'end')
      return whereaboutsOf((await this.editOrphanScript([key], [edit.op, field, value])) as string | null);
    if (await this.endOrphan(connectionId, userId, false)) return ORPHANED; // ended in its record
    // Held by a node now (it gets the command), or gone.
    return whereaboutsOf(await this.shards.forKey(key).command.hget(key, 'n'));
  }

  /**
   * A node drains (itself) or was declared dead: its sessions are detached
   * and held by no node until resumed or their window ends (SPEC §12.5).
   */
  async orphan(nodeId: string, partitions?: readonly number[]): Promise<number> {
    if (nodeId === this.nodeId) this.stopWriting();
    const parts = await this.walk.members((partition) => this.names.nodeSessions(partition, nodeId), partitions);
    const orphaned = parts.flatMap(({ partition, members }) =>
      members.map((member) => {
        const { connectionId, userId } = parseSessionMember(member);
        const keys = [
          this.names.session(userId, connectionId),
          this.names.user(userId),
          this.names.nodeUsers(partition, nodeId),
          this.names.nodeSessions(partition, nodeId),
          this.names.orphanSessions(partition),
        ];
        return this.orphanScript(keys, [nodeId, member, userId]) as Promise<number>;
      }),
    );
    return (await Promise.all(orphaned)).reduce((sum, one) => sum + one, 0);
  }

  stop(): void {
    this.stopWriting();
    if (this.orphanTimer !== null) clearTimeout(this.orphanTimer);
    this.orphanTimer = null;
  }

  private stopWriting(): void {
    this.isStopped = true;
    this.writer.stop();
  }

  private scheduleOrphanPoll(): void {
    if (this.isStopped) return;
    this.orphanTimer = setTimeout(
      () => void this.endOrphans().finally(() => this.scheduleOrphanPoll()),
      ORPHAN_POLL_MS / 2 + Math.random() * ORPHAN_POLL_MS,
    );
    this.orphanTimer.unref();
  }

  /** Orphaned sessions whose window ended, every partition's read at once: each ends as if its connection closed then. */
  private async endOrphans(): Promise<void> {
    const partitions = this.shards.data.filter((link) => link.isUp).flatMap((link) => this.shards.partitionsOf(link));
    if (partitions.length === 0) return;
    try {
      const due = await this.walk.due((partition) => this.names.orphanSessions(partition), ORPHAN_BATCH, partitions);
      const ends = due.flatMap(({ members }) =>
        members.map((member) => {
          const { connectionId, userId } = parseSessionMember(member);
          return this.endOrphan(connectionId, userId, true);
        }),
      );
      const ended = (await Promise.all(ends)).filter((one) => one).length;
      if (ended > 0) this.logger.log({ msg: 'orphaned sessions ended: window over', sessions: ended });
    } catch (err) {
      this.logger.debug({ msg: 'orphaned sessions check failed', error: (err as Error).message });
    }
  }
}
