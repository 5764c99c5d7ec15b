/** The presence lattice `gateway.user` seen as user statuses (SPEC §7). */
import { LatticeMirror, type LatticeChange, type RegisterValue } from './lattice-mirror';
import { Listeners } from './listeners';

/** The namespace of the users lattice, in the client's dotted form. */
export const USERS_NAMESPACE = 'gateway.user';

export type PresenceStatus = 'active' | 'inactive' | 'offline';

/** A user's status and the gateway's timestamp of it (ms; 0 for a user never seen). */
export interface UserPresence {
  readonly userId: string;
  readonly status: PresenceStatus;
  readonly sinceMs: number;
}

const STATUS_VARIABLE = 'status_register';
const STATUSES: ReadonlySet<string> = new Set(['active', 'inactive', 'offline']);

/**
 * Statuses of the users the backend lets this connection watch. Each status
 * is a register (`[ts_ms, status]`) merged by crdt.ts, so an older status
 * arriving late (e.g. in a snapshot after a reconnect) never wins.
 */
export class UsersMirror {
  readonly lattice = new LatticeMirror(USERS_NAMESPACE);
  private readonly changed = new Listeners<[changes: readonly UserPresence[]]>();

  constructor() {
    this.lattice.onChange((changes) => this.onLatticeChange(changes));
  }

  /** The user's status, or undefined when the gateway never sent it. */
  status(userId: string): PresenceStatus | undefined {
    return this.presence(userId)?.status;
  }

  /** Every watched user, sorted by id. */
  list(): UserPresence[] {
    return this.lattice
      .keys()
      .sort()
      .map((userId) => this.presence(userId))
      .filter((entry): entry is UserPresence => entry !== undefined);
  }

  /** Call `listener` with the users whose status changed; returns the remover. */
  onChange(listener: (changes: readonly UserPresence[]) => void): () => void {
    return this.changed.add(listener);
  }

  private presence(userId: string): UserPresence | undefined {
    const register = this.lattice.get(userId)?.[STATUS_VARIABLE];
    if (
      register === undefined ||
      typeof register === 'number' ||
      register.length !== 2 ||
      typeof register[0] !== 'number'
    )
      return undefined;
    const [sinceMs, status] = register as RegisterValue;
    return typeof status === 'string' && STATUSES.has(status)
      ? { userId, status: status as PresenceStatus, sinceMs }
      : undefined;
  }

  private onLatticeChange(changes: readonly LatticeChange[]): void {
    const presences = changes
      .filter((change) => change.variables.includes(STATUS_VARIABLE))
      .map((change) => this.presence(change.key))
      .filter((entry): entry is UserPresence => entry !== undefined);
    if (presences.length > 0) this.changed.emit(presences);
  }
}
