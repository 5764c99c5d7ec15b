import { Injectable, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { Broker, DataCodec } from '../cluster/broker';
import { ClusterContext } from '../cluster/cluster-context';
import { GatewayConfig } from '../config/gateway-config';
import { Connection } from '../connections/connection';
import { ConnectionRegistry } from '../connections/connection-registry';
import { GatewayMetrics } from '../metrics/gateway-metrics';
import { encodeLattice } from '../protocol/frames';
import { pathToWire } from '../protocol/identifiers';
import { LatticeBody } from './lattice-body';
import { LatticeEntry, decodeEntry, encodeEntry } from './lattice-entry';
import { LatticeLog } from './lattice-log';
import { LatticeReplicas } from './lattice-replicas';
import { LatticeDelta, LatticeStore } from './lattice-store';

/** Cluster mode: how often held namespaces are compared with their position in Redis (a missed last update). */
const POSITION_CHECK_MS = 5000;
/** Longer delays make setTimeout fire at once; a far deadline is re-armed when this one fires. */
const MAX_TIMER_MS = 2_147_483_647;

interface SubscribeData {
  readonly namespace: string;
  readonly body: LatticeBody;
}

/** Endpoint 4's data as it crosses nodes. */
const SUBSCRIBE_CODEC: DataCodec<SubscribeData> = {
  encode: (data) => ({ n: data.namespace, x: encodeEntry({ atMs: 0, body: data.body }) }),
  decode: (json) => {
    const { n, x } = json as { n: string; x: string };
    return { namespace: n, body: decodeEntry(JSON.parse(x)).body };
  },
};

/**
 * Lattice subscriptions and updates (SPEC §6). Deltas are computed per USER
 * and encoded once per user, then sent to that user's attached connections.
 * In cluster mode (SPEC §11) every update goes through the namespace's log in
 * Redis and this node applies the log, in order, for the namespaces it holds.
 */
@Injectable()
export class LatticeService implements OnModuleInit, OnModuleDestroy {
  private readonly store = new LatticeStore();
  /** namespace → attached connections (pending ones included; they get a snapshot after hello). */
  private readonly attached = new Map<string, Set<Connection>>();
  private readonly byConnection = new Map<Connection, Set<string>>();
  private expiryTimer: NodeJS.Timeout | null = null;
  private expiryAt: number | null = null;
  private retentionTimer: NodeJS.Timeout | null = null;
  private positionTimer: NodeJS.Timeout | null = null;
  private readonly framesSent;
  /** Cluster mode only. */
  private readonly log: LatticeLog | null = null;
  private readonly replicas: LatticeReplicas | null = null;

  constructor(
    private readonly broker: Broker,
    private readonly registry: ConnectionRegistry,
    private readonly metrics: GatewayMetrics,
    config: GatewayConfig,
    cluster: ClusterContext,
  ) {
    this.framesSent = metrics.framesSent.labels('lattice');
    if (cluster.link !== null) {
      this.log = new LatticeLog(cluster.link, cluster.names, cluster.nodeId, config.latticeRetentionMs);
      const apply = (namespace: string, entry: LatticeEntry) =>
        this.applyUpdate(namespace, entry.body, entry.atMs, true);
      const exportState = (namespace: string): LatticeEntry => {
        const atMs = Date.now();
        return { atMs, body: this.store.exportNamespace(namespace, atMs) };
      };
      this.replicas = new LatticeReplicas(this.log, broker, apply, exportState, metrics);
      cluster.link.onUp(() => this.replicas!.resyncAll());
      const log = this.log;
      const replicas = this.replicas;
      this.retentionTimer = setInterval(
        () => void log.refresh(replicas.namespaces).catch(() => undefined),
        retentionRefreshMs(config.latticeRetentionMs),
      );
      this.retentionTimer.unref();
      this.positionTimer = setInterval(() => {
        if (cluster.link!.isUp) void replicas.checkPositions().catch(() => undefined);
      }, POSITION_CHECK_MS);
      this.positionTimer.unref();
    }
  }

  onModuleInit(): void {
    this.broker.handle<SubscribeData>(
      'lattice_subscribe',
      (connectionId, data) => this.applySubscribe(connectionId, data.namespace, data.body),
      SUBSCRIBE_CODEC,
    );
    this.broker.handle<string>('lattice_unsubscribe', (connectionId, namespace) =>
      this.applyUnsubscribe(connectionId, namespace),
    );
    this.broker.listen('l', (namespace, payload) => this.replicas?.message(namespace, payload));
    this.registry.onRemove((connection) => {
      for (const namespace of [...(this.byConnection.get(connection) ?? [])]) this.detach(connection, namespace);
    });
  }

  onModuleDestroy(): void {
    if (this.expiryTimer) clearTimeout(this.expiryTimer);
    if (this.retentionTimer) clearInterval(this.retentionTimer);
    if (this.positionTimer) clearInterval(this.positionTimer);
  }

  /** Endpoint 4; resolves once the owner node attached the connection and sent its snapshot. */
  subscribe(connectionId: string, namespace: string, body: LatticeBody): Promise<void> {
    return this.broker.toOwner<SubscribeData>('lattice_subscribe', connectionId, { namespace, body });
  }

  unsubscribe(connectionId: string, namespace: string): Promise<void> {
    return this.broker.toOwner('lattice_unsubscribe', connectionId, namespace);
  }

  /** Endpoint 6. In cluster mode it resolves once the update is in the namespace's log. */
  async update(namespace: string, body: LatticeBody): Promise<void> {
    if (this.log === null) return this.applyUpdate(namespace, body, Date.now(), false);
    const entry = { atMs: Date.now(), body };
    const position = await this.log.append(namespace, entry);
    await this.replicas!.appended(namespace, position, entry);
    await this.log.confirm();
  }

  /** After hello: one snapshot per namespace the connection is attached to (SPEC §3). */
  sendSnapshots(connection: Connection): void {
    for (const namespace of this.byConnection.get(connection) ?? []) this.sendSnapshot(connection, namespace);
  }

  /** SPEC §15.2 `/v1/info`: namespaces held on this node (a kept count). */
  get namespaceCount(): number {
    return this.store.namespaceCount;
  }

  /** SPEC §12.5: the namespaces a resumable session is attached to, as its session record keeps them. */
  namespacesOf(connection: Connection): string[] {
    return [...(this.byConnection.get(connection) ?? [])];
  }

  /**
   * SPEC §12.5 (cluster mode): a session taken over from another node is
   * attached again to its namespaces; this node holds each one, loaded from
   * its log in Redis (private parts set while the session was detached
   * included), before it resolves. The snapshots follow the resumed hello.
   */
  async restoreSubscriptions(connection: Connection, namespaces: readonly string[]): Promise<void> {
    await Promise.all(
      namespaces.map(async (namespace) => {
        if (this.replicas === null) return this.attach(connection, namespace);
        await this.replicas.hold(namespace);
        await this.replicas.run(namespace, () => {
          if (connection.state !== 'closed') this.attach(connection, namespace);
        });
        if (!this.attached.has(namespace)) this.releaseNamespace(namespace);
      }),
    );
  }

  private applySubscribe(connectionId: string, namespace: string, body: LatticeBody): Promise<void> | void {
    const connection = this.registry.get(connectionId);
    // SPEC §5: an unknown or just-closed connection is 204 and nothing happens: its body is not
    // merged, or the namespace and its private data would be kept with nobody to drop them.
    if (connection === undefined || connection.state === 'closed') return;
    if (this.log !== null) return this.subscribeThroughLog(connection, namespace, body);
    // The update reaches every attached connection first, then the newcomer gets its snapshot (swindon's order).
    this.applyUpdate(namespace, body, Date.now(), true);
    this.attach(connection, namespace);
    if (connection.isReady) this.sendSnapshot(connection, namespace);
  }

  /** Cluster mode: the body goes into the log like any update; the newcomer's snapshot follows it in order. */
  private async subscribeThroughLog(connection: Connection, namespace: string, body: LatticeBody): Promise<void> {
    const entry = { atMs: Date.now(), body };
    await this.replicas!.hold(namespace);
    const position = await this.log!.append(namespace, entry);
    await this.replicas!.appended(namespace, position, entry);
    await this.replicas!.run(namespace, () => {
      if (connection.state === 'closed') return;
      this.attach(connection, namespace);
      if (connection.isReady) this.sendSnapshot(connection, namespace);
    });
    // The connection left meanwhile and nobody else here holds the namespace.
    if (!this.attached.has(namespace)) this.releaseNamespace(namespace);
    // Its session record says so before the 204 (SPEC §12.5).
    await this.registry.subscriptionsChanged(connection);
  }

  private applyUnsubscribe(connectionId: string, namespace: string): Promise<void> | undefined {
    const connection = this.registry.get(connectionId);
    if (connection === undefined) return;
    this.detach(connection, namespace);
    return this.registry.subscriptionsChanged(connection);
  }

  /** `isKept`: merge even with nobody attached (a subscribe, or a namespace this node holds in cluster mode). */
  private applyUpdate(namespace: string, body: LatticeBody, nowMs: number, isKept: boolean): void {
    const connections = this.attached.get(namespace);
    // Nobody attached: nothing to deliver and nothing worth keeping (SPEC §6.3, state is re-sent with endpoint 4).
    if (connections === undefined && !isKept) return;
    const delta = this.store.merge(namespace, body, nowMs);
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
    // Entries past their deadline go first, even if the expiry timer has not fired yet
    // (cluster mode: a namespace just loaded from the log may hold some).
    this.store.expire(Date.now());
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
      // SPEC §6.3: a namespace with no subscribers may be dropped; the backend re-sends state (cluster: Redis keeps it).
      this.attached.delete(namespace);
      this.releaseNamespace(namespace);
    } else if (this.log === null && userId !== null && ![...connections].some((c) => c.userId === userId)) {
      // Cluster mode keeps every user's entries: this node's copy must equal the log to merge it.
      this.store.dropUser(namespace, userId);
    }
  }

  private releaseNamespace(namespace: string): void {
    this.replicas?.release(namespace);
    this.store.dropNamespace(namespace);
    this.metrics.latticeNamespaces.set(this.store.namespaceCount);
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

/** Refresh held namespaces' keys well within LATTICE_RETENTION (between 1 s and 10 min). */
function retentionRefreshMs(retentionMs: number): number {
  return Math.min(Math.max(Math.floor(retentionMs / 3), 1000), 600_000);
}
