import { Injectable, OnModuleInit } from '@nestjs/common';
import { Broker } from '../cluster/broker';
import { Connection } from '../connections/connection';
import { ConnectionRegistry } from '../connections/connection-registry';
import { CLOSE_DISCONNECTED, REASON_DISCONNECTED } from '../protocol/close-codes';
import { ResumableSessionsService } from '../resume/resumable-sessions.service';

/**
 * SPEC §12.6: the backend ends connections. The owner node closes each one
 * with 4403 `disconnected` and removes it from the registry at once, so its
 * session ends now (a resumable session with it) and not when the client
 * finishes the closing handshake; the command's ack, and so the 204, follows
 * that removal (SPEC §11 read your writes).
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
    // A user's connections may be on any node.
    this.broker.handle<null>('user_disconnect', (userId) => this.applyToUser(userId));
  }

  /** Close one connection, pending ones included; a well-formed unknown id is a no-op. */
  disconnect(connectionId: string): Promise<void> {
    return this.broker.toOwner('connection_disconnect', connectionId, null);
  }

  /**
   * Close every connection of `userId` on every node; a user without
   * connections is a no-op. Cluster mode: its resumable sessions that no node
   * holds (their node drained or died) end too (SPEC §12.6).
   */
  async disconnectUser(userId: string): Promise<void> {
    await Promise.all([this.broker.toEveryNode('user_disconnect', userId, null), this.resumables.records?.endOrphansOfUser(userId)]);
  }

  private applyToConnection(connectionId: string): void {
    const connection = this.registry.get(connectionId);
    if (connection !== undefined) this.end(connection);
  }

  private applyToUser(userId: string): void {
    // A copy: each removal changes the registry's set of the user's connections.
    for (const connection of [...this.registry.ofUser(userId)]) this.end(connection);
  }

  private end(connection: Connection): void {
    // A pending connection's authorization answer is then ignored: no hello (HelloService).
    connection.close(CLOSE_DISCONNECTED, REASON_DISCONNECTED);
    this.registry.remove(connection);
  }
}
