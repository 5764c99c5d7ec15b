import { Logger } from '@nestjs/common';
import { TopicPosition } from '../protocol/topic-position';
import {
  SessionSubscriptions,
  SessionRecord,
  SessionStart,
  TakeoverResult,
  RecordField,
  OrphanEdit,
  OrphanedSession,
  HeldSession,
  encodeRecordedPosition,
  decodeRecordedPosition,
} from './session-record';
import { ClusterNames, parseSessionMember, partitionOf, sessionMember } from '../cluster/channels';
import { PartitionBatch } from '../cluster/partition-batch';
import { PartitionWalk } from '../cluster/partition-walk';
import { ClusterUnavailableError } from '../cluster/cluster-unavailable.error';
import { RedisLink } from '../cluster/redis-link';
import { GONE, Moved, ORPHANED, Whereabouts, movedTo, whereaboutsOf } from '../cluster/whereabouts';
import {
  AFTER_WINDOW_MS,
  EDIT_ORPHAN,
  END_ORPHAN,
  ENDED,
  ORPHAN,
  ORPHAN_BATCH,
  ORPHAN_POLL_MS,
  SCRIPT_ORIGIN,
  TAKEOVER,
  WRITE_CHANGE,
  WRITE_START,
} from './session-record-scripts';

/** A tick's flush: the sessions whose record named another holder (connection id → holder), and whether REDIS_WAIT_REPLICAS confirmed the writes. */
interface Flushed {
  readonly moved: Map<string, string>;
  isConfirmed: boolean;
}

const NOTHING_MOVED = Promise.resolve(undefined);

const NOT_CONFIRMED = new ClusterUnavailableError(
  'cluster_unavailable',
  'the session record was not confirmed by the Redis replicas in time; retry',
);

/**
 * An attached session's record lives this long unrefreshed: longer than a dead
 * node takes to be declared dead (§11, ≤ 15 s), so the reaper always finds the
 * records of a SIGKILLed node's sessions and gives them their window.
 */
export const ATTACHED_TTL_MS = 60_000;
/** The holder refreshes its attached sessions' records this often. */
const REFRESH_MS = 20_000;

/** What changed in a session during one tick. */
interface Change {
  readonly start?: SessionStart;
  readonly subscriptions?: SessionSubscriptions;
  readonly windowEndAt?: number;
  /** Written again after a Redis reconnection. */
  readonly isRestart?: boolean;
}

type Script = (keys: readonly string[], args: readonly (string | number | Buffer)[]) => Promise<unknown>;

/** What the records writer keeps of a session between writes: what it wrote, to remove what went. */
interface Written {
  topics: Set<string>;
  namespaces: Set<string>;
}

/**
 * The Redis side of resumable sessions (SPEC §12.5, docs/cluster.md
 * "Resumable sessions"): records written when a session starts and on every
 * change of its subscriptions, batched per tick in one pipeline; the
 * takeover script; node death and drain; and the end of orphaned sessions'
 * windows. Tokens never reach Redis, only their digests.
 */
export class SessionRecords {
  private readonly logger = new Logger(SessionRecords.name);
  private readonly takeoverScript: Script;
  private readonly orphanScript: Script;
  private readonly endOrphanScript: Script;
  private readonly editOrphanScript: Script;
  private readonly endedScript: Script;
  private readonly walk: PartitionWalk;
  /** The user of each session whose record this node writes (the record lives in the user's partition). */
  private readonly userOf = new Map<string, string>();
  private onEndedListener: (connectionId: string) => void = () => undefined;
  private readonly writeStartName = 'gatewaySessionWriteStart';
  private readonly writeChangeName = 'gatewaySessionWriteChange';
  private readonly written = new Map<string, Written>();
  /** Writes of this tick: connection id → the record's new state (a start, or subscriptions). */
  private readonly pending = new Map<string, Change>();
  /** The tick's flush: resolves to the sessions whose record named another holder (connection id → holder). */
  private flushing: Promise<Flushed> | null = null;
  private refreshTimer: NodeJS.Timeout | null = null;
  private orphanTimer: NodeJS.Timeout | null = null;
  private isStopped = false;

  constructor(
    private readonly link: RedisLink,
    private readonly names: ClusterNames,
    private readonly nodeId: string,
    private readonly windowMs: number,
    private readonly held: () => Iterable<HeldSession>,
    private readonly restart: () => Iterable<[SessionStart, SessionSubscriptions]> = () => [],
  ) {
    this.takeoverScript = link.script('gatewaySessionTakeover', 9, TAKEOVER);
    this.orphanScript = link.script('gatewaySessionOrphan', 5, ORPHAN);
    this.endOrphanScript = link.script('gatewaySessionEndOrphan', 7, END_ORPHAN);
    this.editOrphanScript = link.script('gatewaySessionEditOrphan', 1, EDIT_ORPHAN);
    this.endedScript = link.script('gatewaySessionEnded', 4, ENDED);
    this.walk = new PartitionWalk(link);
    link.script(this.writeStartName, 4, WRITE_START);
    link.script(this.writeChangeName, 1, WRITE_CHANGE);
    // After a reconnection Redis may have lost the records (or missed changes made while it was down),
    // and a session may have been revoked meanwhile: settled before this node delivers anything again.
    link.onSettle(async () => {
      this.written.clear();
      // A session another node took over meanwhile is forgotten by the flush (its notice follows).
      const rewrites = [...this.restart()].map(([start, subscriptions]) =>
        this.rewrite(start, subscriptions).catch(() => undefined),
      );
      await Promise.all(rewrites);
    });
    this.refreshTimer = setInterval(() => void this.refresh(), REFRESH_MS);
    this.refreshTimer.unref();
    this.scheduleOrphanPoll();
  }

  /** This node drained: its sessions are held by no node now (their records take the commands). */
  get hasLetGo(): boolean {
    return this.isStopped;
  }

  /** A session started (its hello is about to go): resolves once its record is in Redis. */
  async started(start: SessionStart, subscriptions: SessionSubscriptions): Promise<void> {
    await this.queue(start.connectionId, { start, subscriptions });
  }

  /**
   * After a Redis reconnection: the session's record written again from
   * scratch. A session revoked meanwhile is not: its copy here must end
   * ({@link onEnded}).
   */
  async rewrite(start: SessionStart, subscriptions: SessionSubscriptions): Promise<void> {
    await this.queue(start.connectionId, { start, subscriptions, isRestart: true });
  }

  /** Who ends a copy here whose session was revoked while this node could not hear of it (SPEC §12.6). */
  onEnded(listener: (connectionId: string) => void): void {
    this.onEndedListener = listener;
  }

  /** Its subscriptions changed: resolves once the record says so, or to {@link Moved} when another node holds it now. */
  changed(connectionId: string, subscriptions: SessionSubscriptions): Promise<Moved | undefined> {
    return this.queue(connectionId, { subscriptions });
  }

  /** Its socket is gone: the record carries the window end, and expires after it ({@link Moved}: another node holds it). */
  detached(connectionId: string, windowEndAt: number): Promise<Moved | undefined> {
    return this.queue(connectionId, { windowEndAt });
  }

  /** This node rebuilt the session from its record: what is in Redis is what it wrote. */
  adopted(record: SessionRecord): void {
    this.userOf.set(record.connectionId, record.userId);
    this.written.set(record.connectionId, {
      topics: new Set(record.topics.keys()),
      namespaces: new Set(record.namespaces),
    });
  }

  /** The session left this node (ended, or taken over elsewhere): its record is no longer ours to write. */
  forget(connectionId: string): void {
    this.written.delete(connectionId);
    this.pending.delete(connectionId);
    this.userOf.delete(connectionId);
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

  /** Another node took the session over: it leaves this node's set (the takeover moved the rest). */
  released(connectionId: string, userId: string): void {
    const set = this.names.nodeSessions(partitionOf(userId), this.nodeId);
    this.link.command.srem(set, sessionMember(connectionId, userId)).catch(() => undefined);
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
    const record = await this.link.timed('hgetall', this.link.command.hgetall(key));
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
    return whereaboutsOf(await this.link.command.hget(this.names.session(userId, connectionId), 'n'));
  }

  /** The user of the session `connectionId` as the connection index has it; null when Redis knows no such session. */
  private async userOfRecord(connectionId: string): Promise<string | null> {
    const userId = await this.link.timed('get', this.link.command.get(this.names.sessionUser(connectionId)));
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
    return whereaboutsOf(await this.link.command.hget(key, 'n')); // held by a node now (it gets the command), or gone
  }

  /**
   * A node drains (itself) or was declared dead: its sessions are detached
   * and held by no node until resumed or their window ends (SPEC §12.5).
   */
  async orphan(nodeId: string): Promise<void> {
    if (nodeId === this.nodeId) this.isStopped = true;
    const parts = await this.walk.members((partition) => this.names.nodeSessions(partition, nodeId));
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
    const count = (await Promise.all(orphaned)).reduce((sum, one) => sum + one, 0);
    if (count > 0) this.logger.log({ msg: 'sessions detached from their node', node: nodeId, sessions: count });
  }

  stop(): void {
    this.isStopped = true;
    if (this.refreshTimer !== null) clearInterval(this.refreshTimer);
    if (this.orphanTimer !== null) clearTimeout(this.orphanTimer);
    this.refreshTimer = this.orphanTimer = null;
  }

  /** Resolves to {@link Moved} when another node took the session over meanwhile (nothing written). */
  private queue(connectionId: string, change: Change): Promise<Moved | undefined> {
    if (this.isStopped || !this.link.isWritable) return NOTHING_MOVED;
    if (change.start !== undefined) this.userOf.set(connectionId, change.start.userId);
    const known = this.pending.get(connectionId);
    this.pending.set(connectionId, { ...known, ...change });
    // One pipeline per tick for every session that changed in it.
    const flushed = (this.flushing ??= new Promise<void>((resolve) => setImmediate(resolve)).then(() => this.flush()));
    return flushed.then(({ moved, isConfirmed }) => {
      const holder = moved.get(connectionId);
      if (holder !== undefined) return movedTo(holder);
      // SPEC §13.1 REDIS_WAIT_REPLICAS: a subscription change is answered (204) only once replicas have it.
      if (!isConfirmed && change.subscriptions !== undefined && change.start === undefined) throw NOT_CONFIRMED;
      return undefined;
    });
  }

  private async flush(): Promise<Flushed> {
    this.flushing = null;
    const moved = new Map<string, string>();
    const flushed: Flushed = { moved, isConfirmed: true };
    const batch = [...this.pending];
    this.pending.clear();
    if (this.isStopped) return flushed;
    const writes = new PartitionBatch(this.link);
    /** Batch index of each change script → its session. */
    const changes = new Map<number, string>();
    /** Batch index of each start script → its session. */
    const starts = new Map<number, string>();
    for (const [connectionId, change] of batch) {
      const userId = this.userOf.get(connectionId);
      if (userId === undefined) continue; // not ours (any more)
      const partition = partitionOf(userId);
      const key = this.names.session(userId, connectionId);
      const start = change.start;
      if (start !== undefined) {
        // The connection index: a resume or a /v1 command naming the connection finds the record by it
        // (both are written before the session's hello goes out).
        writes.add(partitionOf(connectionId), 'set', [this.names.sessionUser(connectionId), userId, 'PX', this.keepMs]);
        const keys = [
          key,
          this.names.sessionToken(userId, start.digest),
          this.names.nodeSessions(partition, this.nodeId),
          this.names.userSessions(userId),
        ];
        const args = [
          this.nodeId,
          ATTACHED_TTL_MS,
          start.digest,
          userId,
          start.authJson,
          start.handlerName,
          this.windowMs,
          start.windowEndAt,
          connectionId,
          change.isRestart === true ? '1' : '0',
          start.authEndsAt ?? 0,
          sessionMember(connectionId, userId),
        ];
        starts.set(writes.add(partition, this.writeStartName, [...keys, ...args]), connectionId);
      } else if (!this.written.has(connectionId)) {
        continue; // not ours (any more)
      }
      const [fields, gone] =
        change.subscriptions === undefined ? [[], []] : this.subscriptionChanges(connectionId, change.subscriptions);
      if (fields.length === 0 && gone.length === 0 && change.windowEndAt === undefined) continue;
      const args = [key, this.nodeId, change.windowEndAt ?? '', fields.length / 2, ...fields, ...gone];
      changes.set(writes.add(partition, this.writeChangeName, args), connectionId);
    }
    if (writes.size === 0) return flushed;
    try {
      const replies = await this.link.timed('session records', writes.exec());
      await this.link.confirmWrites().catch(() => (flushed.isConfirmed = false));
      for (const [index, connectionId] of starts) {
        // Revoked while this node could not hear of it (SPEC §12.6): its copy ends here too, never written back.
        if (replies[index]?.[1] !== -1) continue;
        changes.delete(index + 1);
        this.forget(connectionId);
        this.onEndedListener(connectionId);
      }
      for (const [index, connectionId] of changes) {
        const reply = replies[index]?.[1];
        if (typeof reply !== 'string') continue;
        // Taken over by another node, whose notice has not reached us yet: that node gets the command.
        moved.set(connectionId, reply);
        this.forget(connectionId);
      }
    } catch (err) {
      this.logger.warn({ msg: 'session records not written', sessions: batch.length, error: (err as Error).message });
    }
    return flushed;
  }

  /** What to set ([field, value, …]) and delete in the record for `subscriptions`, against what was written. */
  private subscriptionChanges(connectionId: string, subscriptions: SessionSubscriptions): [string[], string[]] {
    const before = this.written.get(connectionId) ?? { topics: new Set<string>(), namespaces: new Set<string>() };
    const fields: string[] = [];
    const gone: string[] = [];
    for (const [topic, position] of subscriptions.topics)
      if (!before.topics.has(topic)) fields.push(RecordField.topic(topic), encodeRecordedPosition(position));
    for (const topic of before.topics) if (!subscriptions.topics.has(topic)) gone.push(RecordField.topic(topic));
    const namespaces = new Set(subscriptions.namespaces);
    for (const namespace of namespaces)
      if (!before.namespaces.has(namespace)) fields.push(RecordField.namespace(namespace), '1');
    for (const namespace of before.namespaces)
      if (!namespaces.has(namespace)) gone.push(RecordField.namespace(namespace));
    if (subscriptions.watch !== null) fields.push(RecordField.watch, JSON.stringify(subscriptions.watch));
    else gone.push(RecordField.watch);
    this.written.set(connectionId, { topics: new Set(subscriptions.topics.keys()), namespaces });
    return [fields, gone];
  }

  /**
   * How long a token, the connection index, a user's sessions set and a
   * node's set live unrefreshed: longer than any record they name can (an
   * attached record unrefreshed, then orphaned, then its whole window).
   */
  private get keepMs(): number {
    return ATTACHED_TTL_MS + this.windowMs + AFTER_WINDOW_MS;
  }

  /**
   * Keep this node's sessions' keys alive: attached records, and every
   * session's token, connection index, user's set and this node's sets;
   * detached records expire after their window.
   */
  private async refresh(): Promise<void> {
    if (this.isStopped || !this.link.isUp) return;
    const expires = new PartitionBatch(this.link);
    const users = new Set<string>();
    const partitions = new Set<number>();
    for (const session of this.held()) {
      const { connectionId, userId } = session;
      const partition = partitionOf(userId);
      partitions.add(partition);
      if (!users.has(userId)) expires.add(partition, 'pexpire', [this.names.userSessions(userId), this.keepMs]);
      users.add(userId);
      expires.add(partition, 'pexpire', [this.names.sessionToken(userId, session.digest), this.keepMs]);
      expires.add(partitionOf(connectionId), 'pexpire', [this.names.sessionUser(connectionId), this.keepMs]);
      if (!session.isDetached)
        expires.add(partition, 'pexpire', [this.names.session(userId, connectionId), ATTACHED_TTL_MS]);
    }
    if (users.size === 0) return;
    // The node's sets go by themselves too if every node stops for good (a reaper deletes them otherwise).
    for (const partition of partitions)
      expires.add(partition, 'pexpire', [this.names.nodeSessions(partition, this.nodeId), this.keepMs]);
    await expires.exec().catch(() => undefined);
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
    if (!this.link.isUp) return;
    try {
      const due = await this.walk.due((partition) => this.names.orphanSessions(partition), ORPHAN_BATCH);
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
