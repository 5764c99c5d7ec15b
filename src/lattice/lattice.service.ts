import { Injectable, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import type { Applied } from '../cluster/whereabouts';
import { Broker, DataCodec } from '../cluster/broker';
import { Connection } from '../connections/connection';
import { ConnectionRegistry } from '../connections/connection-registry';
import { SessionParts } from '../resume/session-parts';
import { RecordField } from '../resume/session-record';
import { LatticeBody } from './lattice-body';
import { decodeEntry, encodeEntry } from './lattice-entry';
import { LatticeSync } from './lattice-sync';
import { LocalLattices } from './local-lattices';

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
 * Lattice subscriptions and updates (SPEC §6): endpoints 4-6 reach the node
 * owning the connection; this node's copy and delivery are
 * {@link LocalLattices}, and how updates reach it is the {@link LatticeSync}
 * of the mode the gateway runs in.
 */
@Injectable()
export class LatticeService implements OnModuleInit, OnModuleDestroy {
  constructor(
    private readonly broker: Broker,
    private readonly registry: ConnectionRegistry,
    private readonly local: LocalLattices,
    private readonly sync: LatticeSync,
    private readonly sessionParts: SessionParts,
  ) {}

  onModuleInit(): void {
    this.broker.handle<SubscribeData>(
      'lattice_subscribe',
      (connectionId, data) => this.applySubscribe(connectionId, data.namespace, data.body),
      SUBSCRIBE_CODEC,
    );
    this.broker.handle<string>('lattice_unsubscribe', (connectionId, namespace) =>
      this.applyUnsubscribe(connectionId, namespace),
    );
    this.sessionParts.register('namespaces', {
      read: (connection) => this.local.namespacesOf(connection),
      // Attached again, each namespace held here and loaded from its log; the snapshots follow the resumed hello.
      restore: async (connection, namespaces) => {
        await Promise.all(namespaces.map((namespace) => this.sync.restore(connection, namespace)));
      },
      orphanEdits: {
        // The body goes into the namespace's log first, as any update.
        lattice_subscribe: async (data) => {
          const { namespace, body } = data as SubscribeData;
          await this.update(namespace, body);
          return { op: 'set', field: RecordField.namespace(namespace), value: '1' };
        },
        lattice_unsubscribe: (namespace) => ({ op: 'del', field: RecordField.namespace(namespace as string) }),
      },
    });
    this.broker.listen('l', (namespace, payload) => this.sync.received(namespace, payload));
    this.registry.onRemove((connection) => {
      for (const namespace of this.local.namespacesOf(connection)) this.detach(connection, namespace);
    });
  }

  onModuleDestroy(): void {
    this.local.stop();
    this.sync.stop();
  }

  /** Endpoint 4; resolves once the owner node attached the connection and sent its snapshot. */
  subscribe(connectionId: string, namespace: string, body: LatticeBody): Promise<void> {
    return this.broker.toOwner<SubscribeData>('lattice_subscribe', connectionId, { namespace, body });
  }

  unsubscribe(connectionId: string, namespace: string): Promise<void> {
    return this.broker.toOwner('lattice_unsubscribe', connectionId, namespace);
  }

  /** Endpoint 6. In cluster mode it resolves once the update is in the namespace's log. */
  update(namespace: string, body: LatticeBody): Promise<void> {
    return this.sync.update(namespace, body);
  }

  /** After hello: one snapshot per namespace the connection is attached to (SPEC §3). */
  sendSnapshots(connection: Connection): void {
    for (const namespace of this.local.namespacesOf(connection)) this.local.sendSnapshot(connection, namespace);
  }

  /** SPEC §15.2 `/v1/info`: namespaces held on this node (a kept count). */
  get namespaceCount(): number {
    return this.local.namespaceCount;
  }

  /** SPEC §15.2: the namespaces a connection is attached to. */
  namespacesOf(connection: Connection): string[] {
    return this.local.namespacesOf(connection);
  }

  private applySubscribe(connectionId: string, namespace: string, body: LatticeBody): Applied | void {
    const connection = this.registry.get(connectionId);
    // SPEC §5: an unknown or just-closed connection is 204 and nothing happens: its body is not
    // merged, or the namespace and its private data would be kept with nobody to drop them.
    if (connection === undefined || connection.state === 'closed') return;
    return this.sync.subscribe(connection, namespace, body);
  }

  private applyUnsubscribe(connectionId: string, namespace: string): Applied | undefined {
    const connection = this.registry.get(connectionId);
    if (connection === undefined) return;
    this.detach(connection, namespace);
    return this.registry.subscriptionsChanged(connection);
  }

  private detach(connection: Connection, namespace: string): void {
    if (!this.local.detach(connection, namespace, this.sync.isKeepingUsers)) return;
    this.sync.released(namespace);
    this.local.dropNamespace(namespace);
  }
}
