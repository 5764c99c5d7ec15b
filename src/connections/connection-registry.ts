import { Injectable } from '@nestjs/common';
import type { WebSocket } from 'ws';
import { GatewayConfig, Handler } from '../config/gateway-config';
import { GatewayMetrics } from '../metrics/gateway-metrics';
import type { Moved } from '../cluster/whereabouts';
import { Connection } from './connection';
import { SetMap } from './set-map';
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
  private readonly byUser = new SetMap<string, Connection>();
  private readonly removeListeners: ConnectionListener[] = [];
  /** Detached sessions (SPEC §12.2): in the registry, without a socket. */
  private readonly detached = new Set<Connection>();
  private readonly onSlowConsumer: (connection: Connection) => void;
  private changeListener: ((connection: Connection) => Promise<Moved | undefined>) | null = null;

  constructor(
    private readonly config: GatewayConfig,
    private readonly metrics: GatewayMetrics,
  ) {
    this.onSlowConsumer = () => metrics.slowConsumerCloses.inc();
  }

  /** NODE_ID of this node. */
  get nodeId(): string {
    return this.config.nodeId;
  }

  /** Connections, those awaiting authorization and detached sessions included (the MAX_CONNECTIONS bound). */
  get size(): number {
    return this.byId.size;
  }

  /** Connections with a socket (detached sessions not counted). */
  get liveCount(): number {
    return this.byId.size - this.detached.size;
  }

  /** Register a new, pending connection with a fresh id (SPEC §5). */
  open(socket: WebSocket, handler: Handler, isResumable = false): Connection {
    const id = newConnectionId(this.config.nodeId);
    const connection = new Connection(
      id,
      handler,
      socket,
      this.config.limits.clientQueueMaxBytes,
      this.onSlowConsumer,
      isResumable,
    );
    this.byId.set(id, connection);
    this.metrics.connections.inc();
    this.metrics.connectionsOpened.inc();
    return connection;
  }

  /**
   * Cluster mode, SPEC §12.5: register a session taken over from another node
   * under its own connection id, pending until its subscriptions are back.
   */
  adopt(connectionId: string, socket: WebSocket, handler: Handler): Connection {
    const connection = new Connection(
      connectionId,
      handler,
      socket,
      this.config.limits.clientQueueMaxBytes,
      this.onSlowConsumer,
      true,
    );
    this.byId.set(connectionId, connection);
    this.metrics.connections.inc();
    return connection;
  }

  /**
   * A resumable session's subscriptions changed (topics, lattices, the users
   * lattice): its record is rewritten (cluster mode, SPEC §12.5). Resolves once
   * written, so a /v1 command's 204 follows, or to {@link Moved} when another
   * node holds the session now; undefined when nobody listens.
   */
  subscriptionsChanged(connection: Connection): Promise<Moved | undefined> | undefined {
    if (this.changeListener === null || !connection.isResumable || !this.holds(connection)) return undefined;
    return this.changeListener(connection);
  }

  /** Whether subscription changes are recorded (cluster mode with resumable sessions, SPEC §12.5). */
  get isRecording(): boolean {
    return this.changeListener !== null;
  }

  onSubscriptionsChange(listener: (connection: Connection) => Promise<Moved | undefined>): void {
    this.changeListener = listener;
  }

  /** Index a connection under its user once authorized. */
  bindUser(connection: Connection, userId: string): void {
    this.byUser.add(userId, connection);
  }

  /** Whether `connection` is still registered (not removed). */
  holds(connection: Connection): boolean {
    return this.byId.get(connection.id) === connection;
  }

  /** SPEC §12.2: the socket is gone, the session stays (its id, user and subscriptions). */
  detach(connection: Connection): void {
    if (!this.holds(connection) || this.detached.has(connection)) return;
    connection.state = 'detached';
    this.detached.add(connection);
    this.metrics.connections.dec();
    this.metrics.sessionsDetached.inc();
  }

  /** SPEC §12.3: a session takes a new socket (detached, or still attached to a half-open one). */
  reattach(connection: Connection, socket: WebSocket): void {
    if (this.detached.delete(connection)) {
      this.metrics.connections.inc();
      this.metrics.sessionsDetached.dec();
    }
    connection.attachSocket(socket);
  }

  /** Remove and notify listeners; a second call is a no-op. */
  remove(connection: Connection): void {
    if (!this.holds(connection)) return;
    this.byId.delete(connection.id);
    if (this.detached.delete(connection)) {
      this.metrics.sessionsDetached.dec();
    } else {
      this.metrics.connections.dec();
    }
    connection.state = 'closed';
    const userId = connection.userId;
    if (userId !== null) this.byUser.delete(userId, connection);
    for (const listener of this.removeListeners) listener(connection);
  }

  get(connectionId: string): Connection | undefined {
    return this.byId.get(connectionId);
  }

  /** Authorized connections of a user on this node (none when the user has none). */
  ofUser(userId: string): Iterable<Connection> {
    return this.byUser.valuesOf(userId) ?? NONE;
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
}

const NONE: readonly Connection[] = [];
