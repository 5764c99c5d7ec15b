import { Moved } from '../cluster/whereabouts';
import { Connection } from '../connections/connection';
import { HeldSession, OrphanedSession, SessionRecord, SessionStart, SessionSubscriptions } from './session-record';

/**
 * What a resume token leads to (SPEC §12.3): the session held here (one
 * node: its token checked in memory), a session taken over through its
 * record (cluster mode: wherever it was held, with the new token the
 * takeover issued), or none (the failure is counted).
 */
export type Takeover =
  | { readonly kind: 'here'; readonly connection: Connection }
  | { readonly kind: 'record'; readonly record: SessionRecord; readonly token: string }
  | { readonly kind: 'none' };

/** What a failed token lookup counts in `gateway_resumes_total`. */
export type ResumeFailure = 'expired' | 'invalid';

/** This node's sessions, as a store sees them (ResumableSessionsService). */
export interface SessionHost {
  /** The sessions this node holds, for the refresh of their records. */
  held(): Iterable<HeldSession>;
  /** After a Redis reconnection: every authorized session here, to be written again. */
  restarts(): Iterable<[SessionStart, SessionSubscriptions]>;
  /** The session of `token` in this node's memory, or why there is none (counted). */
  lookUp(token: string, handlerName: string): { ok: true; connection: Connection } | { ok: false };
  countFailure(result: ResumeFailure): void;
  /** Another node took the session over: its copy here goes (4409). */
  takenElsewhere(connectionId: string, generation: number): void;
  /** A write to its record found another node holding the session: its copy here goes. */
  movedAway(connection: Connection, moved: Moved): Moved;
  /** Revoked while this node could not hear of it: its copy here ends (4403). */
  endRevoked(connectionId: string): void;
}

/**
 * Where a resumable session (SPEC §12) lives beyond this node's memory: on
 * one node nowhere ({@link LocalSessionStore}), in cluster mode its record in
 * Redis (redis-session-store.ts), so a resume works on any node (§12.5).
 * Chosen once, in ResumeModule.
 */
export abstract class SessionStore {
  /** Connects the store to this node's sessions; called once, by ResumableSessionsService. */
  abstract attach(host: SessionHost): void;
  /** A session starts (before its hello); resolves once it can be resumed anywhere. */
  abstract started(start: SessionStart, subscriptions: SessionSubscriptions): Promise<void> | undefined;
  /** SPEC §12.3: the session `token` resumes, on the handler it was opened on. */
  abstract takeOver(token: string, handlerName: string): Takeover | Promise<Takeover>;
  /** A session taken over from its record is held here now. */
  abstract adopted(record: SessionRecord): void;
  /** A session lost its socket: detached until `windowEndAt` (epoch ms). */
  abstract detached(connection: Connection, windowEndAt: number): void;
  /** Another node took the session over: it is no longer held here. */
  abstract released(connectionId: string, userId: string): void;
  /** The session is gone from this node. */
  abstract forget(connectionId: string): void;
  /** SPEC §15.2: a session held by no node, as its record has it; null when none (or none can be). */
  abstract orphaned(connectionId: string): Promise<OrphanedSession | null>;
  /**
   * SPEC §12.5: before a drained or dead node's presence goes, its sessions
   * are held by no node (those of `partitions` only, when given). Resolves
   * to how many it detached.
   */
  abstract orphan(nodeId: string, partitions?: readonly number[]): Promise<number>;
  /** A session's connection closed here: whether it leaves here (false: another node holds it now). */
  abstract ended(connectionId: string, userId: string): Promise<boolean>;
  abstract stop(): void;
}

const LEAVES = Promise.resolve(true);
const NONE: Takeover = Object.freeze({ kind: 'none' });

/**
 * One node, or a cluster without resumable sessions: a session lives in this
 * node's memory only, and a token resumes only here.
 */
export class LocalSessionStore extends SessionStore {
  private host: SessionHost | null = null;

  attach(host: SessionHost): void {
    this.host = host;
  }

  started(): undefined {
    return undefined;
  }

  takeOver(token: string, handlerName: string): Takeover {
    const found = this.host?.lookUp(token, handlerName);
    return found?.ok === true ? { kind: 'here', connection: found.connection } : NONE;
  }

  adopted(): void {}

  detached(): void {}

  released(): void {}

  forget(): void {}

  orphaned(): Promise<null> {
    return Promise.resolve(null);
  }

  orphan(): Promise<number> {
    return Promise.resolve(0);
  }

  ended(): Promise<boolean> {
    return LEAVES;
  }

  stop(): void {}
}
