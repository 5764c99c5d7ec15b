import { Injectable, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { Broker } from '../cluster/broker';
import { Connection } from '../connections/connection';
import { ConnectionRegistry } from '../connections/connection-registry';
import { GatewayMetrics } from '../metrics/gateway-metrics';
import { encodeLattice } from '../protocol/frames';
import { pathToWire } from '../protocol/identifiers';
import { LatticeBody } from './lattice-body';
import { LatticeDelta, LatticeStore } from './lattice-store';

/**
 * Lattice subscriptions and updates (SPEC §6). Deltas are computed per USER
 * and encoded once per user, then sent to that user's attached connections.
 */
@Injectable()
export class LatticeService implements OnModuleInit, OnModuleDestroy {
  private readonly store = new LatticeStore();
  /** namespace → attached connections (pending ones included; they get a snapshot after hello). */
  private readonly attached = new Map<string, Set<Connection>>();
  private readonly byConnection = new Map<Connection, Set<string>>();
  private expiryTimer: NodeJS.Timeout | null = null;
  private expiryAt: number | null = null;
  private readonly framesSent;

  constructor(
    private readonly broker: Broker,
    private readonly registry: ConnectionRegistry,
    private readonly metrics: GatewayMetrics,
  ) {
    this.framesSent = metrics.framesSent.labels('lattice');
  }

  onModuleInit(): void {
    this.broker.handle('lattice_subscribe', (c) => this.applySubscribe(c.connectionId, c.namespace, c.body));
    this.broker.handle('lattice_unsubscribe', (c) => this.applyUnsubscribe(c.connectionId, c.namespace));
    this.broker.handle('lattice_update', (c) => this.applyUpdate(c.namespace, c.body));
    this.registry.onRemove((connection) => {
      for (const namespace of [...(this.byConnection.get(connection) ?? [])]) this.detach(connection, namespace);
    });
  }

  onModuleDestroy(): void {
    if (this.expiryTimer) clearTimeout(this.expiryTimer);
  }

  subscribe(connectionId: string, namespace: string, body: LatticeBody): Promise<void> {
    return this.broker.dispatch({ kind: 'lattice_subscribe', connectionId, namespace, body });
  }

  unsubscribe(connectionId: string, namespace: string): Promise<void> {
    return this.broker.dispatch({ kind: 'lattice_unsubscribe', connectionId, namespace });
  }

  update(namespace: string, body: LatticeBody): Promise<void> {
    return this.broker.dispatch({ kind: 'lattice_update', namespace, body });
  }

  /** After hello: one snapshot per namespace the connection is attached to (SPEC §3). */
  sendSnapshots(connection: Connection): void {
    for (const namespace of this.byConnection.get(connection) ?? []) this.sendSnapshot(connection, namespace);
  }

  private applySubscribe(connectionId: string, namespace: string, body: LatticeBody): void {
    const connection = this.registry.get(connectionId);
    // The update reaches every attached connection first, then the newcomer gets its snapshot (swindon's order).
    this.applyUpdate(namespace, body, true);
    if (connection === undefined || connection.state === 'closed') return;
    this.attach(connection, namespace);
    if (connection.isReady) this.sendSnapshot(connection, namespace);
  }

  private applyUnsubscribe(connectionId: string, namespace: string): void {
    const connection = this.registry.get(connectionId);
    if (connection !== undefined) this.detach(connection, namespace);
  }

  private applyUpdate(namespace: string, body: LatticeBody, isSubscribing = false): void {
    const connections = this.attached.get(namespace);
    // Nobody attached: nothing to deliver and nothing worth keeping (SPEC §6.3, state is re-sent with endpoint 4).
    if (connections === undefined && !isSubscribing) return;
    const delta = this.store.merge(namespace, body, Date.now());
    this.metrics.latticeNamespaces.set(this.store.namespaceCount);
    this.armExpiry();
    if (connections !== undefined) this.deliverDelta(namespace, connections, delta);
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

  private sendSnapshot(connection: Connection, namespace: string): void {
    const snapshot = this.store.snapshotFor(namespace, connection.userId!);
    if (connection.send(encodeLattice(pathToWire(namespace), snapshot))) this.framesSent.inc();
  }

  private attach(connection: Connection, namespace: string): void {
    let connections = this.attached.get(namespace);
    if (connections === undefined) this.attached.set(namespace, (connections = new Set()));
    connections.add(connection);
    let namespaces = this.byConnection.get(connection);
    if (namespaces === undefined) this.byConnection.set(connection, (namespaces = new Set()));
    namespaces.add(namespace);
  }

  private detach(connection: Connection, namespace: string): void {
    const connections = this.attached.get(namespace);
    if (connections === undefined || !connections.delete(connection)) return;
    const namespaces = this.byConnection.get(connection)!;
    namespaces.delete(namespace);
    if (namespaces.size === 0) this.byConnection.delete(connection);
    const userId = connection.userId;
    if (connections.size === 0) {
      // SPEC §6.3: a namespace with no subscribers may be dropped; the backend re-sends state.
      this.attached.delete(namespace);
      this.store.dropNamespace(namespace);
      this.metrics.latticeNamespaces.set(this.store.namespaceCount);
    } else if (userId !== null && ![...connections].some((c) => c.userId === userId)) {
      this.store.dropUser(namespace, userId);
    }
  }

  private armExpiry(): void {
    const at = this.store.nextExpiryAt();
    if (at === null || (this.expiryAt !== null && this.expiryAt <= at)) return;
    if (this.expiryTimer) clearTimeout(this.expiryTimer);
    this.expiryAt = at;
    this.expiryTimer = setTimeout(() => {
      this.expiryTimer = null;
      this.expiryAt = null;
      this.store.expire(Date.now());
      this.armExpiry();
    }, Math.max(0, at - Date.now()));
    this.expiryTimer.unref();
  }
}
