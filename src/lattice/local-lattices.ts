import { Injectable } from '@nestjs/common';
import { Connection } from '../connections/connection';
import { GatewayMetrics } from '../metrics/gateway-metrics';
import { encodeLattice } from '../protocol/frames';
import { pathToWire } from '../protocol/identifiers';
import { LatticeBody } from './lattice-body';
import { LatticeEntry } from './lattice-entry';
import { LatticeDelta, LatticeStore } from './lattice-store';

/** Longer delays make setTimeout fire at once; a far deadline is re-armed when this one fires. */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * This node's lattices (SPEC §6): the merged state of the namespaces it
 * keeps, which connections are attached to each, and delivery. Deltas are
 * computed per USER and encoded once per user, then sent to that user's
 * attached connections. Shared by {@link LatticeService} and the lattice
 * sync of the mode the gateway runs in (memory or Redis).
 */
@Injectable()
export class LocalLattices {
  private readonly store = new LatticeStore();
  /** namespace → attached connections (pending ones included; they get a snapshot after hello). */
  private readonly attached = new Map<string, Set<Connection>>();
  private readonly byConnection = new Map<Connection, Set<string>>();
  private expiryTimer: NodeJS.Timeout | null = null;
  private expiryAt: number | null = null;
  private readonly framesSent;

  constructor(private readonly metrics: GatewayMetrics) {
    this.framesSent = metrics.framesSent.labels('lattice');
  }

  /** Namespaces this node keeps (a kept count). */
  get namespaceCount(): number {
    return this.store.namespaceCount;
  }

  /** Whether any connection here is attached to `namespace`. */
  hasAttached(namespace: string): boolean {
    return this.attached.has(namespace);
  }

  /** The namespaces `connection` is attached to. */
  namespacesOf(connection: Connection): string[] {
    return [...(this.byConnection.get(connection) ?? [])];
  }

  /** `isKept`: merge even with nobody attached (a subscribe, or a namespace this node holds in cluster mode). */
  applyUpdate(namespace: string, body: LatticeBody, nowMs: number, isKept: boolean): void {
    const connections = this.attached.get(namespace);
    // Nobody attached: nothing to deliver and nothing worth keeping (SPEC §6.3, state is re-sent with endpoint 4).
    if (connections === undefined && !isKept) return;
    const delta = this.store.merge(namespace, body, nowMs);
    this.metrics.latticeNamespaces.set(this.store.namespaceCount);
    this.armExpiry();
    if (connections !== undefined) this.deliverDelta(namespace, connections, delta);
  }

  /** The whole state of a namespace as one entry (cluster mode: merged back into a log Redis lost). */
  exportState(namespace: string): LatticeEntry {
    const atMs = Date.now();
    return { atMs, body: this.store.exportNamespace(namespace, atMs) };
  }

  sendSnapshot(connection: Connection, namespace: string): void {
    // Entries past their deadline go first, even if the expiry timer has not fired yet
    // (cluster mode: a namespace just loaded from the log may hold some).
    this.store.expire(Date.now());
    const snapshot = this.store.snapshotFor(namespace, connection.userId!);
    if (connection.send(encodeLattice(pathToWire(namespace), snapshot))) this.framesSent.inc();
  }

  attach(connection: Connection, namespace: string): void {
    let connections = this.attached.get(namespace);
    if (connections === undefined) this.attached.set(namespace, (connections = new Set()));
    connections.add(connection);
    let namespaces = this.byConnection.get(connection);
    if (namespaces === undefined) this.byConnection.set(connection, (namespaces = new Set()));
    namespaces.add(namespace);
  }

  /**
   * Detach `connection`; true when the namespace has no connection here any
   * more (the caller releases it). `isKeepingUsers`: the entries of a user
   * with no connection left stay (cluster mode: this copy must equal the log).
   */
  detach(connection: Connection, namespace: string, isKeepingUsers: boolean): boolean {
    const connections = this.attached.get(namespace);
    if (connections === undefined || !connections.delete(connection)) return false;
    const namespaces = this.byConnection.get(connection)!;
    namespaces.delete(namespace);
    if (namespaces.size === 0) this.byConnection.delete(connection);
    const userId = connection.userId;
    if (connections.size === 0) {
      // SPEC §6.3: a namespace with no subscribers may be dropped; the backend re-sends state (cluster: Redis keeps it).
      this.attached.delete(namespace);
      return true;
    }
    if (!isKeepingUsers && userId !== null && ![...connections].some((c) => c.userId === userId))
      this.store.dropUser(namespace, userId);
    return false;
  }

  dropNamespace(namespace: string): void {
    this.store.dropNamespace(namespace);
    this.metrics.latticeNamespaces.set(this.store.namespaceCount);
  }

  stop(): void {
    if (this.expiryTimer) clearTimeout(this.expiryTimer);
  }

  /** One visible delta and one encoding per user; nothing for users with nothing to see. */
  private deliverDelta(namespace: string, connections: ReadonlySet<Connection>, delta: LatticeDelta): void {
    const frames = new Map<string, Buffer | null>();
    const wire = pathToWire(namespace);
    let sent = 0;
    for (const connection of connections) {
      const userId = connection.userId;
      if (userId === null || !connection.isReady) continue;
      let frame = frames.get(userId);
      if (frame === undefined) {
        const visible = this.store.visibleDeltaFor(namespace, userId, delta);
        frame = visible === null ? null : Buffer.from(encodeLattice(wire, visible));
        frames.set(userId, frame);
      }
      if (frame !== null && connection.send(frame)) sent++;
    }
    // Counted once per update (prom-client hashes the labels on every inc).
    if (sent > 0) this.framesSent.inc(sent);
  }

  private armExpiry(): void {
    const at = this.store.nextExpiryAt();
    if (at === null || (this.expiryAt !== null && this.expiryAt <= at)) return;
    if (this.expiryTimer) clearTimeout(this.expiryTimer);
    this.expiryAt = at;
    this.expiryTimer = setTimeout(
      () => {
        this.expiryTimer = null;
        this.expiryAt = null;
        this.store.expire(Date.now());
        this.armExpiry();
      },
      Math.min(MAX_TIMER_MS, Math.max(0, at - Date.now())),
    );
    this.expiryTimer.unref();
  }
}
