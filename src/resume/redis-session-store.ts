import { Logger } from '@nestjs/common';
import { Broker } from '../cluster/broker';
import { ClusterNames } from '../cluster/channels';
import { RedisShards } from '../cluster/redis-shards';
import { GONE, Whereabouts } from '../cluster/whereabouts';
import { Connection } from '../connections/connection';
import { ConnectionRegistry } from '../connections/connection-registry';
import { OrphanedSession, SessionRecord, SessionStart, SessionSubscriptions, TakeoverResult } from './session-record';
import { SessionParts } from './session-parts';
import { SessionRecordWriter } from './session-record-writer';
import { SessionRecords } from './session-records';
import { SessionHost, SessionStore, Takeover } from './session-store';
import { connectionIdOfToken, newSessionToken, tokenDigest } from './session-token';

const NONE: Takeover = Object.freeze({ kind: 'none' });

/** Until ResumableSessionsService attaches: no sessions yet. */
const NO_HOST: SessionHost = {
  held: () => [],
  restarts: () => [],
  lookUp: () => ({ ok: false }),
  countFailure: () => undefined,
  takenElsewhere: () => undefined,
  movedAway: (_, moved) => moved,
  endRevoked: () => undefined,
};

/**
 * Cluster mode with resumable sessions (SPEC §12.5): every session's record
 * in Redis ({@link SessionRecords}), so a token resumes it on any node, a
 * command finds it wherever it is held, and one held by no node (its node
 * drained or died) is edited in its record.
 */
export class RedisSessionStore extends SessionStore {
  private readonly logger = new Logger(RedisSessionStore.name);
  private readonly records: SessionRecords;
  /** The records of the sessions held here. */
  private readonly writer: SessionRecordWriter;
  private host: SessionHost = NO_HOST;

  constructor(
    shards: RedisShards,
    names: ClusterNames,
    windowMs: number,
    private readonly registry: ConnectionRegistry,
    private readonly broker: Broker,
    private readonly parts: SessionParts,
  ) {
    super();
    this.records = new SessionRecords(
      shards,
      names,
      registry.nodeId,
      windowMs,
      () => this.host.held(),
      () => this.host.restarts(),
    );
    this.writer = this.records.writer;
  }

  attach(host: SessionHost): void {
    this.host = host;
    const records = this.records;
    this.registry.onSubscriptionsChange((connection) =>
      this.writer
        .changed(connection.id, this.parts.read(connection))
        .then((moved) => moved && host.movedAway(connection, moved)),
    );
    this.broker.locate({
      // A draining node gave its resumable sessions away (held by no node): commands go to their records.
      isHere: (connectionId) => {
        const connection = this.registry.get(connectionId);
        return connection !== undefined && !(connection.isResumable && records.hasLetGo);
      },
      whereIs: (connectionId) => records.whereIs(connectionId),
      applyToRecord: (kind, connectionId, data) => this.applyToRecord(kind, connectionId, data),
    });
    this.broker.handle<number>('session_taken', (connectionId, generation) =>
      host.takenElsewhere(connectionId, generation),
    );
    this.writer.onEnded((connectionId) => host.endRevoked(connectionId));
  }

  started(start: SessionStart, subscriptions: SessionSubscriptions): Promise<void> {
    return this.writer.started(start, subscriptions);
  }

  /**
   * SPEC §12.3/12.5: take over the session of `token` through Redis,
   * wherever it is held (this node included: its digest is checked there
   * too). The old holder is told to close its copy's socket (4409).
   */
  async takeOver(token: string, handlerName: string): Promise<Takeover> {
    const { records, host } = this;
    const connectionId = connectionIdOfToken(token);
    // Not a token of ours: no session to take over (every token this build issues names its session).
    if (connectionId === null) return this.failed(host, 'invalid');
    const next = newSessionToken(connectionId);
    let result: TakeoverResult;
    try {
      result = await records.takeOver(connectionId, tokenDigest(token), handlerName, tokenDigest(next));
    } catch (err) {
      this.logger.warn({ msg: 'resume lookup failed', error: (err as Error).message });
      result = { ok: false, result: 'invalid' };
    }
    if (!result.ok) return this.failed(host, result.result);
    const { previousHolder, generation } = result.record;
    if (previousHolder !== '' && previousHolder !== this.registry.nodeId)
      this.broker.notify('session_taken', previousHolder, connectionId, generation);
    return { kind: 'record', record: result.record, token: next };
  }

  private failed(host: SessionHost, result: 'expired' | 'invalid'): Takeover {
    host.countFailure(result);
    return NONE;
  }

  adopted(record: SessionRecord): void {
    this.writer.adopted(record);
  }

  detached(connection: Connection, windowEndAt: number): void {
    const { host } = this;
    void this.writer.detached(connection.id, windowEndAt).then((moved) => moved && host.movedAway(connection, moved));
  }

  released(connectionId: string, userId: string): void {
    this.records.released(connectionId, userId);
  }

  forget(connectionId: string): void {
    this.writer.forget(connectionId);
  }

  orphaned(connectionId: string): Promise<OrphanedSession | null> {
    return this.records.orphaned(connectionId);
  }

  orphan(nodeId: string, partitions?: readonly number[]): Promise<number> {
    return this.records.orphan(nodeId, partitions);
  }

  ended(connectionId: string, userId: string): Promise<boolean> {
    return this.records.ended(connectionId, userId);
  }

  stop(): void {
    this.records.stop();
  }

  /**
   * SPEC §12.2: a /v1 command for a session whose node drained or died, not
   * resumed yet, is written into its record (the edit its feature
   * registered, {@link SessionParts}), so its effect is there on resume.
   * Resolves to where the session is: held by a node that took it meanwhile
   * (the command is sent there), else orphaned (applied) or gone.
   */
  private async applyToRecord(kind: string, connectionId: string, data: unknown): Promise<Whereabouts> {
    const edit = this.parts.orphanEdit(kind, data);
    return edit === undefined ? GONE : this.records.editOrphan(connectionId, await edit);
  }
}
