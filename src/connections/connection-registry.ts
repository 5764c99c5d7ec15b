import { Injectable } from '@nestjs/common';
import type { WebSocket } from 'ws';
import { GatewayConfig, Handler } from '../config/gateway-config';
import { GatewayMetrics } from '../metrics/gateway-metrics';
import { Connection } from './connection';
import { newConnectionId } from '../protocol/connection-id';

/** Called once when a connection leaves the registry. */
export type ConnectionListener = (connection: Connection) => void;

/**
 * Who is connected on this node: id → connection, user → connections.
 * Other modules attach their per-connection state and register `onRemove`
 * to drop it (STYLE B4: upward notifications are typed callbacks).
 */
@Injectable()
export class ConnectionRegistry {
  private readonly byId = new Map<string, Connection>();
  /** A user's one connection as itself (the usual case, no Set to hold); two or more in a Set. */
  private readonly byUser = new Map<string, Connection | Set<Connection>>();
  private readonly removeListeners: ConnectionListener[] = [];
  private readonly onSlowConsumer: (connection: Connection) => void;

  constructor(
    private readonly config: GatewayConfig,
    private readonly metrics: GatewayMetrics,
  ) {
    this.onSlowConsumer = () => metrics.slowConsumerCloses.inc();
  }

  /** Open connections, those awaiting authorization included. */
  get size(): number {
    return this.byId.size;
  }

  /** Register a new, pending connection with a fresh id (SPEC §5). */
  open(socket: WebSocket, handler: Handler): Connection {
    const id = newConnectionId(this.config.nodeId);
    const connection = new Connection(id, handler, socket, this.config.limits.clientQueueMaxBytes, this.onSlowConsumer);
    this.byId.set(id, connection);
    this.metrics.connections.inc();
    this.metrics.connectionsOpened.inc();
    return connection;
  }

  /** Index a connection under its user once authorized. */
  bindUser(connection: Connection, userId: string): void {
    const held = this.byUser.get(userId);
    if (held === undefined) this.byUser.set(userId, connection);
    else if (held instanceof Set) held.add(connection);
    else if (held !== connection) this.byUser.set(userId, new Set([held, connection]));
  }

  /** Remove and notify listeners; a second call is a no-op. */
  remove(connection: Connection): void {
    if (this.byId.get(connection.id) !== connection) return;
    this.byId.delete(connection.id);
    connection.state = 'closed';
    this.metrics.connections.dec();
    const userId = connection.userId;
    if (userId !== null) this.unbindUser(connection, userId);
    for (const listener of this.removeListeners) listener(connection);
  }

  get(connectionId: string): Connection | undefined {
    return this.byId.get(connectionId);
  }

  /** Authorized connections of a user on this node (none when the user has none). */
  ofUser(userId: string): Iterable<Connection> {
    const held = this.byUser.get(userId);
    return held === undefined ? NONE : held instanceof Set ? held : [held];
  }

  /** Whether the user has an authorized connection on this node. */
  hasUser(userId: string): boolean {
    return this.byUser.has(userId);
  }

  all(): IterableIterator<Connection> {
    return this.byId.values();
  }

  onRemove(listener: ConnectionListener): void {
    this.removeListeners.push(listener);
  }

  private unbindUser(connection: Connection, userId: string): void {
    const held = this.byUser.get(userId);
    if (held === connection) {
      this.byUser.delete(userId);
    } else if (held instanceof Set) {
      held.delete(connection);
      // Back to the one-connection form.
      if (held.size === 1) this.byUser.set(userId, held.values().next().value!);
    }
  }
}

const NONE: readonly Connection[] = [];
