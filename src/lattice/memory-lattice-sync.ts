import { Connection } from '../connections/connection';
import { LatticeBody } from './lattice-body';
import { LatticeSync } from './lattice-sync';
import { LocalLattices } from './local-lattices';

const RESOLVED = Promise.resolve();

/** One node: an update is merged into this node's copy at once (SPEC §6). */
export class MemoryLatticeSync extends LatticeSync {
  readonly isKeepingUsers = false;

  constructor(private readonly local: LocalLattices) {
    super();
  }

  update(namespace: string, body: LatticeBody): Promise<void> {
    this.local.applyUpdate(namespace, body, Date.now(), false);
    return RESOLVED;
  }

  subscribe(connection: Connection, namespace: string, body: LatticeBody): void {
    // The update reaches every attached connection first, then the newcomer gets its snapshot (swindon's order).
    this.local.applyUpdate(namespace, body, Date.now(), true);
    this.local.attach(connection, namespace);
    if (connection.isReady) this.local.sendSnapshot(connection, namespace);
  }

  restore(connection: Connection, namespace: string): Promise<void> {
    this.local.attach(connection, namespace);
    return RESOLVED;
  }

  received(): void {}

  released(): void {}

  stop(): void {}
}
