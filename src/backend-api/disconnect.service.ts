import { Injectable, OnModuleInit } from '@nestjs/common';
import { Broker } from '../cluster/broker';
import { ClusterUnavailableError } from '../cluster/cluster-unavailable.error';
import { Connection } from '../connections/connection';
import { ConnectionRegistry } from '../connections/connection-registry';
import { CLOSE_DISCONNECTED, REASON_DISCONNECTED } from '../protocol/close-codes';
import { ResumableSessionsService } from '../resume/resumable-sessions.service';
import { HeldRevocations, Revocation } from '../resume/user-sessions';

/**
 * SPEC §12.6: the backend ends connections. The owner node closes each one
 * with 4403 `disconnected` and removes it from the registry at once, so its
 * session ends now (a resumable session with it) and not when the client
 * finishes the closing handshake; the command's ack, and so the 204, follows
 * that removal (SPEC §11 read your writes).
 *
 * Cluster mode with resumable sessions: the end is first recorded in Redis,
 * where every takeover checks it, and the node that held the session then
 * must confirm it ended its copy, as must each node the session was taken
 * from that has not let its copy go yet (its socket may be half-open, and on
 * shards its takeover notice can come after a topic message published after
 * the 204); 204 only then. A node that cannot record it (its Redis link is
 * down), or one of those nodes that does not confirm within 5 s while alive,
 * answers 503 `cluster_unavailable` (the backend retries).
 */
@Injectable()
export class DisconnectService implements OnModuleInit {
  constructor(
    private readonly broker: Broker,
    private readonly registry: ConnectionRegistry,
    private readonly resumables: ResumableSessionsService,
  ) {}

  onModuleInit(): void {
    this.broker.handle<null>('connection_disconnect', (connectionId) => this.applyToConnection(connectionId));
    // A user's connections may be on any node; the data names the user's sessions revoked in Redis (null from earlier versions).
    this.broker.handle<readonly string[] | null>('user_disconnect', (userId, revoked) =>
      this.applyToUser(userId, revoked ?? []),
    );
  }

  /** Close one connection, pending ones included; a well-formed unknown id is a no-op. */
  disconnect(connectionId: string): Promise<void> {
    const local = this.registry.get(connectionId);
    // A legacy connection here has nothing in Redis: it ends here, whatever the link does.
    if (local !== undefined && !local.isResumable)
      return this.broker.toOwner('connection_disconnect', connectionId, null);
    return this.revoke(connectionId, local);
  }

  /**
   * Close every connection of `userId` on every node; a user without
   * connections is a no-op. Cluster mode: its resumable sessions are revoked
   * in Redis first, held ones and those no node holds (their node drained or
   * died) alike, and each holder confirms.
   */
  async disconnectUser(userId: string): Promise<void> {
    let held: HeldRevocations;
    try {
      held = await this.resumables.userSessions.revokeUser(userId);
    } catch (err) {
      this.applyToUser(userId, []);
      throw unrecorded(err);
    }
    const ids = held.map(([connectionId]) => connectionId);
    // Every node that listens gets the user's command; each node that may hold a copy is waited for by name
    // (one cut off from the control instance while alive is no listener, yet may still get topic messages).
    await confirmed(
      Promise.all([
        this.broker.toEveryNode('user_disconnect', userId, ids),
        ...held.flatMap(([connectionId, nodes]) => this.endCopies(connectionId, nodes)),
      ]),
    );
  }

  private async revoke(connectionId: string, local: Connection | undefined): Promise<void> {
    let revocation: Revocation;
    try {
      revocation = await this.resumables.userSessions.revoke(connectionId);
    } catch (err) {
      // Not recorded: what this node holds of it ends anyway, and the backend retries (through another node).
      if (local !== undefined) this.end(local);
      throw unrecorded(err);
    }
    const { where, previousHolders } = revocation;
    // No record in Redis: a pending connection, or an unknown id, on the node its id names.
    if (where.kind === 'gone') return this.broker.toOwner('connection_disconnect', connectionId, null);
    this.resumables.markRevoked(connectionId);
    const stale = this.registry.get(connectionId);
    const isHeldHere = where.kind === 'held' && where.node === this.registry.nodeId;
    if (stale !== undefined && !isHeldHere) this.resumables.dropStale(stale);
    // Held by no node, it ended in Redis; its holder, and the nodes it was taken from, end their copies.
    const nodes = where.kind === 'held' ? [where.node, ...previousHolders] : previousHolders;
    await confirmed(Promise.all(this.endCopies(connectionId, nodes)));
  }

  /**
   * SPEC §12.6: each of `nodes` ends its copy of the revoked session and
   * acks once it is removed; a node that is gone (no liveness key) needs no
   * answer, one alive that does not answer within 5 s fails the call.
   */
  private endCopies(connectionId: string, nodes: readonly string[]): Promise<void>[] {
    return nodes.map((node) => this.broker.toNode('connection_disconnect', node, connectionId, null));
  }

  private applyToConnection(connectionId: string): void {
    this.resumables.markRevoked(connectionId);
    const connection = this.registry.get(connectionId);
    if (connection !== undefined) this.end(connection);
  }

  private applyToUser(userId: string, revoked: readonly string[]): void {
    for (const connectionId of revoked) this.resumables.markRevoked(connectionId);
    // A copy: each removal changes the registry's set of the user's connections.
    for (const connection of [...this.registry.ofUser(userId)]) this.end(connection);
  }

  private end(connection: Connection): void {
    // A pending connection's authorization answer is then ignored: no hello (HelloService).
    connection.close(CLOSE_DISCONNECTED, REASON_DISCONNECTED);
    this.registry.remove(connection);
  }
}

/** SPEC §12.6: the end could not be recorded in Redis. */
function unrecorded(err: unknown): Error {
  if (err instanceof ClusterUnavailableError) return err;
  return new ClusterUnavailableError(
    'cluster_unavailable',
    'Redis is not reachable from this node: the session end is not recorded; retry',
  );
}

/** SPEC §12.6: a holder that does not confirm makes the DELETE 503 `cluster_unavailable`, never 204. */
async function confirmed(pending: Promise<unknown>): Promise<void> {
  try {
    await pending;
  } catch (err) {
    if (!(err instanceof ClusterUnavailableError)) throw err;
    throw new ClusterUnavailableError('cluster_unavailable', err.message);
  }
}
