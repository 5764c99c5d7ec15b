import { Injectable } from '@nestjs/common';
import { Connection } from '../connections/connection';
import type { OrphanEdit, SessionSubscriptions } from './session-record';

/** An orphaned session's record edit for one /v1 command's data. */
export type OrphanEditOf = (data: unknown) => OrphanEdit | Promise<OrphanEdit>;

/**
 * One feature's part of a resumable session's record (SPEC §12.5): what the
 * record keeps of it, how the node that takes the session over puts it back
 * before the resumed hello, and how the feature's /v1 commands edit the
 * record of a session no node holds (§12.2). Each feature registers its own,
 * as it registers its broker handlers.
 */
export interface SessionPart<T> {
  read(connection: Connection): T;
  restore(connection: Connection, held: T): Promise<void>;
  /** Broker command kind → its edit of an orphaned session's record. */
  readonly orphanEdits: Readonly<Record<string, OrphanEditOf>>;
}

type Parts = { [K in keyof SessionSubscriptions]: SessionPart<SessionSubscriptions[K]> };

const NO_PART: SessionPart<never> = {
  read: () => undefined as never,
  restore: () => Promise.resolve(),
  orphanEdits: {},
};

/** The session's own edit: a /v1 disconnect ends an orphaned session in its record (SPEC §12.6). */
const END: OrphanEdit = { op: 'end' };

/**
 * The parts of a resumable session's record, one per feature (topics,
 * lattice namespaces, the users-lattice watch list), registered by the
 * features at start. Read on every record write, restored on a takeover, and
 * the edits of commands for orphaned sessions (cluster mode).
 */
@Injectable()
export class SessionParts {
  private readonly parts: Parts = { topics: NO_PART, namespaces: NO_PART, watch: NO_PART };
  private readonly edits = new Map<string, OrphanEditOf>([['connection_disconnect', () => END]]);

  register<K extends keyof SessionSubscriptions>(name: K, part: SessionPart<SessionSubscriptions[K]>): void {
    (this.parts as Record<K, SessionPart<SessionSubscriptions[K]>>)[name] = part;
    for (const [kind, edit] of Object.entries(part.orphanEdits)) this.edits.set(kind, edit);
  }

  /** What the record keeps of `connection` now. */
  read(connection: Connection): SessionSubscriptions {
    return {
      topics: this.parts.topics.read(connection) ?? new Map(),
      namespaces: this.parts.namespaces.read(connection) ?? [],
      watch: this.parts.watch.read(connection) ?? null,
    };
  }

  /** A session taken over from another node gets every part back; resolves once all are in place. */
  async restore(connection: Connection, held: SessionSubscriptions): Promise<void> {
    await Promise.all([
      this.parts.topics.restore(connection, held.topics),
      this.parts.namespaces.restore(connection, held.namespaces),
      this.parts.watch.restore(connection, held.watch),
    ]);
  }

  /** The record edit of a command `kind` for an orphaned session; undefined when no part edits it. */
  orphanEdit(kind: string, data: unknown): OrphanEdit | Promise<OrphanEdit> | undefined {
    return this.edits.get(kind)?.(data);
  }
}
