import { Logger } from '@nestjs/common';
import { ClusterNames, partitionOf, sessionMember } from '../cluster/channels';
import { ClusterUnavailableError } from '../cluster/cluster-unavailable.error';
import { PartitionBatch } from '../cluster/partition-batch';
import { RedisLink } from '../cluster/redis-link';
import { RedisShards } from '../cluster/redis-shards';
import { Moved, movedTo } from '../cluster/whereabouts';
import {
  HeldSession,
  RecordField,
  SessionRecord,
  SessionStart,
  SessionSubscriptions,
  encodeRecordedPosition,
} from './session-record';
import { AFTER_WINDOW_MS, WRITE_CHANGE, WRITE_START } from './session-record-scripts';

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

/** What the records writer keeps of a session between writes: what it wrote, to remove what went. */
interface Written {
  topics: Set<string>;
  namespaces: Set<string>;
}

/**
 * Writes the records of the sessions this node holds (SPEC §12.5): when a
 * session starts, on every change of its subscriptions and when it detaches,
 * batched per tick in one pipeline per partition; again after a Redis
 * reconnection; and keeps their keys alive while they are held here.
 */
export class SessionRecordWriter {
  private readonly logger = new Logger(SessionRecordWriter.name);
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
  private isStopped = false;

  constructor(
    /** A record lives on its user's partition's link (SPEC §13.4). */
    private readonly shards: RedisShards,
    private readonly names: ClusterNames,
    private readonly nodeId: string,
    private readonly windowMs: number,
    private readonly held: () => Iterable<HeldSession>,
    private readonly restart: () => Iterable<[SessionStart, SessionSubscriptions]>,
  ) {
    shards.script(this.writeStartName, 4, WRITE_START);
    shards.script(this.writeChangeName, 1, WRITE_CHANGE);
    // After a reconnection Redis may have lost the records (or missed changes made while it was down),
    // and a session may have been revoked meanwhile: settled before this node delivers anything again.
    for (const link of shards.data) link.onSettle(() => this.rewriteOn(link));
    this.refreshTimer = setInterval(() => void this.refresh(), REFRESH_MS);
    this.refreshTimer.unref();
  }

  /** The records on `link`, written again after its reconnection. */
  private async rewriteOn(link: RedisLink): Promise<void> {
    const isOnLink = (userId: string | undefined) => userId !== undefined && this.shards.ofName(userId) === link;
    for (const connectionId of this.written.keys())
      if (isOnLink(this.userOf.get(connectionId))) this.written.delete(connectionId);
    // A session another node took over meanwhile is forgotten by the flush (its notice follows).
    const rewrites = [...this.restart()]
      .filter(([start]) => isOnLink(start.userId))
      .map(([start, subscriptions]) => this.rewrite(start, subscriptions).catch(() => undefined));
    await Promise.all(rewrites);
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

  /** Nothing more is written (this node drains, or stops). */
  stop(): void {
    this.isStopped = true;
    if (this.refreshTimer !== null) clearInterval(this.refreshTimer);
    this.refreshTimer = null;
  }

  /** Resolves to {@link Moved} when another node took the session over meanwhile (nothing written). */
  private queue(connectionId: string, change: Change): Promise<Moved | undefined> {
    const userId = change.start?.userId ?? this.userOf.get(connectionId);
    if (this.isStopped || (userId !== undefined && !this.shards.ofName(userId).isWritable)) return NOTHING_MOVED;
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
    const writes = new PartitionBatch(this.shards);
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
      const replies = await this.shards.control.timed('session records', writes.exec());
      await writes.confirmWrites().catch(() => (flushed.isConfirmed = false));
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
    if (this.isStopped) return;
    const expires = new PartitionBatch(this.shards);
    const users = new Set<string>();
    const partitions = new Set<number>();
    for (const session of this.held()) {
      const { connectionId, userId } = session;
      const partition = partitionOf(userId);
      // A link that is down: its sessions' keys are written again after its reconnection.
      if (!this.shards.of(partition).isUp || !this.shards.ofName(connectionId).isUp) continue;
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
}
