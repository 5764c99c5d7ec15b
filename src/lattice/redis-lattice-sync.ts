import { Broker } from '../cluster/broker';
import type { Applied } from '../cluster/whereabouts';
import { RedisShards } from '../cluster/redis-shards';
import { Connection } from '../connections/connection';
import { ConnectionRegistry } from '../connections/connection-registry';
import { GatewayMetrics } from '../metrics/gateway-metrics';
import { LatticeBody } from './lattice-body';
import { LatticeEntry } from './lattice-entry';
import { LatticeLog } from './lattice-log';
import { LatticeReplicas } from './lattice-replicas';
import { LatticeSync } from './lattice-sync';
import { LocalLattices } from './local-lattices';

/** How often held namespaces are compared with their position in Redis (a missed last update). */
const POSITION_CHECK_MS = 5000;

/**
 * Cluster mode (SPEC §11): every update goes through the namespace's log in
 * Redis ({@link LatticeLog}); this node applies the log, in order, for the
 * namespaces it holds ({@link LatticeReplicas}), re-reads them after a
 * reconnection and merges its copy back into a log Redis lost (SPEC §13.1).
 */
export class RedisLatticeSync extends LatticeSync {
  readonly isKeepingUsers = true;
  private readonly replicas: LatticeReplicas;
  private readonly retentionTimer: NodeJS.Timeout;
  private readonly positionTimer: NodeJS.Timeout;

  constructor(
    private readonly log: LatticeLog,
    private readonly local: LocalLattices,
    private readonly registry: ConnectionRegistry,
    shards: RedisShards,
    broker: Broker,
    metrics: GatewayMetrics,
    retentionMs: number,
  ) {
    super();
    const apply = (namespace: string, entry: LatticeEntry) =>
      local.applyUpdate(namespace, entry.body, entry.atMs, true);
    const replicas = (this.replicas = new LatticeReplicas(log, broker, apply, (ns) => local.exportState(ns), metrics));
    // A link back up: the namespaces living there are read again.
    for (const link of shards.data) link.onUp(() => replicas.resyncAll((ns) => shards.ofName(ns) === link));
    this.retentionTimer = setInterval(
      () => void log.refresh(replicas.namespaces).catch(() => undefined),
      retentionRefreshMs(retentionMs),
    );
    this.retentionTimer.unref();
    this.positionTimer = setInterval(() => {
      if (shards.data.some((link) => link.isUp)) void replicas.checkPositions().catch(() => undefined);
    }, POSITION_CHECK_MS);
    this.positionTimer.unref();
  }

  /** Resolves once the update is in the namespace's log (and on the replicas, SPEC §13.1). */
  async update(namespace: string, body: LatticeBody): Promise<void> {
    const entry = { atMs: Date.now(), body };
    const position = await this.log.append(namespace, entry);
    await this.replicas.appended(namespace, position, entry);
    await this.log.confirm(namespace);
  }

  /** The body goes into the log like any update; the newcomer's snapshot follows it in order. */
  async subscribe(connection: Connection, namespace: string, body: LatticeBody): Applied {
    const entry = { atMs: Date.now(), body };
    await this.replicas.hold(namespace);
    const position = await this.log.append(namespace, entry);
    await this.replicas.appended(namespace, position, entry);
    await this.replicas.run(namespace, () => {
      if (connection.state === 'closed') return;
      this.local.attach(connection, namespace);
      if (connection.isReady) this.local.sendSnapshot(connection, namespace);
    });
    // The connection left meanwhile and nobody else here holds the namespace.
    this.releaseIfUnused(namespace);
    // Its session record says so before the 204 (SPEC §12.5).
    return this.registry.subscriptionsChanged(connection);
  }

  /** Held here, loaded from its log in Redis (private parts set while the session was detached included). */
  async restore(connection: Connection, namespace: string): Promise<void> {
    await this.replicas.hold(namespace);
    await this.replicas.run(namespace, () => {
      if (connection.state !== 'closed') this.local.attach(connection, namespace);
    });
    this.releaseIfUnused(namespace);
  }

  received(namespace: string, payload: Buffer): void {
    this.replicas.message(namespace, payload);
  }

  released(namespace: string): void {
    this.replicas.release(namespace);
  }

  stop(): void {
    clearInterval(this.retentionTimer);
    clearInterval(this.positionTimer);
  }

  private releaseIfUnused(namespace: string): void {
    if (this.local.hasAttached(namespace)) return;
    this.replicas.release(namespace);
    this.local.dropNamespace(namespace);
  }
}

/** Refresh held namespaces' keys well within LATTICE_RETENTION (between 1 s and 10 min). */
function retentionRefreshMs(retentionMs: number): number {
  return Math.min(Math.max(Math.floor(retentionMs / 3), 1000), 600_000);
}
