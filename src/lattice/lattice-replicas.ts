import { Logger } from '@nestjs/common';
import { Broker } from '../cluster/broker';
import { GatewayMetrics } from '../metrics/gateway-metrics';
import { LatticeEntry, decodeEntry } from './lattice-entry';
import { LatticeLog, LogPosition, entriesOf } from './lattice-log';

/** Applies one entry to this node's copy and delivers the per-user deltas (the one-node code path). */
export type ApplyEntry = (namespace: string, entry: LatticeEntry) => void;

interface Replica {
  /** Position of the last entry applied here; null while Redis holds nothing for the namespace. */
  position: LogPosition | null;
  /** Every step on this namespace runs in order on this chain. */
  chain: Promise<void>;
}

/**
 * Cluster mode: the namespaces this node holds (it has local subscribers),
 * each kept equal to the namespace's log in Redis (SPEC §11, CLUSTER.md
 * "Lattices: an ordered log"). Entries are applied in log order; a gap in
 * versions, a new epoch or a reconnect makes the node re-read the log and
 * apply what it missed (merge is idempotent, so over-applying is harmless).
 * When Redis lost a namespace, the node appends its own merged state back.
 */
export class LatticeReplicas {
  private readonly logger = new Logger(LatticeReplicas.name);
  private readonly replicas = new Map<string, Replica>();
  private readonly repairs;

  constructor(
    private readonly log: LatticeLog,
    private readonly broker: Broker,
    private readonly apply: ApplyEntry,
    private readonly exportState: (namespace: string) => LatticeEntry,
    metrics: GatewayMetrics,
  ) {
    this.repairs = metrics.latticeRepairs;
  }

  /** Namespaces held here. */
  get namespaces(): IterableIterator<string> {
    return this.replicas.keys();
  }

  /** Hold a namespace: listen to its channel first, then read what Redis has (CLUSTER.md). */
  hold(namespace: string): Promise<void> {
    if (this.replicas.has(namespace)) return this.run(namespace, () => undefined);
    const replica: Replica = { position: null, chain: Promise.resolve() };
    this.replicas.set(namespace, replica);
    return this.run(namespace, async () => {
      await this.broker.join('l', namespace);
      await this.resync(namespace, replica, false);
    });
  }

  /** Stop holding it (no local subscribers left). */
  release(namespace: string): void {
    if (this.replicas.delete(namespace)) this.broker.leave('l', namespace);
  }

  /** Run `step` after every earlier step on the namespace (no-op when not held). */
  run(namespace: string, step: () => Promise<void> | void): Promise<void> {
    const replica = this.replicas.get(namespace);
    if (replica === undefined) return Promise.resolve();
    const next = replica.chain
      .then(step)
      .catch((err: Error) => this.logger.warn({ msg: 'lattice sync step failed', namespace, error: err.message }));
    replica.chain = next;
    return next;
  }

  /** An entry this node appended: apply it in order (its channel echo is skipped). */
  appended(namespace: string, position: LogPosition, entry: LatticeEntry): Promise<void> {
    return this.run(namespace, () => this.receive(namespace, position, entry));
  }

  /** A namespace channel message from another node: `{"e": epoch, "v": version, "x": entry}`. */
  message(namespace: string, payload: Buffer): void {
    if (!this.replicas.has(namespace)) return;
    let position: LogPosition;
    let entry: LatticeEntry;
    try {
      const message = JSON.parse(payload.toString('utf8')) as { e: string; v: number; x: unknown };
      position = { epoch: message.e, version: message.v };
      entry = decodeEntry(message.x);
    } catch (err) {
      return this.logger.warn({ msg: 'malformed lattice message ignored', namespace, error: (err as Error).message });
    }
    void this.run(namespace, () => this.receive(namespace, position, entry));
  }

  /**
   * A missed update is seen at the next one by its version; a missed LAST
   * update has no next one. So every so often compare each held namespace's
   * position in Redis with ours, one round trip for all, and repair the ones
   * behind.
   */
  async checkPositions(): Promise<void> {
    const namespaces = [...this.replicas.keys()];
    if (namespaces.length === 0) return;
    const positions = await this.log.positions(namespaces);
    namespaces.forEach((namespace, i) => {
      const replica = this.replicas.get(namespace);
      const current = positions[i];
      if (replica === undefined || current === null) return;
      const isBehind = (): boolean => {
        const held = replica.position;
        return held === null || held.epoch !== current.epoch || held.version < current.version;
      };
      if (!isBehind()) return;
      void this.run(namespace, async () => {
        // Steps queued meanwhile (an update's own repair) may have caught up already.
        if (this.replicas.get(namespace) !== replica || !isBehind()) return;
        this.repairs.inc();
        await this.resync(namespace, replica, true);
      });
    });
  }

  /** After a Redis reconnect: re-read every held namespace, healing what Redis lost. */
  async resyncAll(isOnIt: (namespace: string) => boolean = () => true): Promise<void> {
    await Promise.all(
      [...this.replicas.keys()]
        .filter(isOnIt)
        .map((namespace) => this.run(namespace, () => this.resync(namespace, this.replicas.get(namespace)!, true))),
    );
  }

  private async receive(namespace: string, position: LogPosition, entry: LatticeEntry): Promise<void> {
    const replica = this.replicas.get(namespace);
    if (replica === undefined) return;
    const held = replica.position;
    const isSameEpoch = held !== null && held.epoch === position.epoch;
    if (isSameEpoch && position.version <= held.version) return; // applied already (a repair read it)
    // The next entry of the epoch we follow, or the first entry of a namespace Redis did not hold.
    if ((isSameEpoch && position.version === held.version + 1) || (held === null && position.version === 1)) {
      this.apply(namespace, entry);
      replica.position = position;
      return;
    }
    // A gap or another epoch: this node missed something.
    this.repairs.inc();
    await this.resync(namespace, replica, true);
  }

  private async resync(namespace: string, replica: Replica, isRepair: boolean): Promise<void> {
    const contents = await this.log.read(namespace);
    const held = replica.position;
    const isSameEpoch = held !== null && contents.position !== null && contents.position.epoch === held.epoch;
    if (isSameEpoch && held.version <= contents.position!.version) {
      if (held.version < contents.snapshotVersion && contents.snapshot !== null)
        this.apply(namespace, contents.snapshot);
      for (const row of contents.entries) if (row.version > held.version) this.apply(namespace, row.entry);
      replica.position = contents.position;
      return;
    }
    // Our copy is ahead of Redis in the same epoch: Redis rolled back (SPEC §13.1).
    if (isSameEpoch)
      this.log.rolledBack(
        namespace,
        `lattice ${namespace}: redis holds version ${contents.position!.version}, this node applied ${held.version}`,
      );
    for (const entry of entriesOf(contents)) this.apply(namespace, entry);
    replica.position = contents.position;
    if (held === null || !isRepair) return;
    // Redis lost this namespace or part of it (restarted empty or from an older snapshot, or another
    // epoch began): merge our copy back (idempotent, CLUSTER.md principle 4).
    this.logger.warn({ msg: "lattice namespace lost by redis: re-appending this node's state", namespace });
    const healed = await this.log.append(namespace, this.exportState(namespace));
    const current = replica.position;
    if (current === null || (current.epoch === healed.epoch && healed.version === current.version + 1))
      replica.position = healed;
  }
}
