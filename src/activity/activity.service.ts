import { Injectable, OnModuleDestroy } from '@nestjs/common';
import { GatewayConfig } from '../config/gateway-config';
import { Connection } from '../connections/connection';
import { ConnectionRegistry } from '../connections/connection-registry';
import { clampActiveMs } from './activity';
import { ActivityNotices, StatusListener } from './activity-notices';
import { PresenceStatus, UserActivity } from './user-activity';

export type { PresenceStatus } from './user-activity';
export type { StatusListener };

/**
 * Activity and inactivity (SPEC §8): one activity deadline per user, shared
 * by its connections; status changes are announced to listeners (presence).
 * Where the deadlines live is the {@link UserActivity} of the mode.
 */
@Injectable()
export class ActivityService implements OnModuleDestroy {
  constructor(
    private readonly config: GatewayConfig,
    private readonly notices: ActivityNotices,
    private readonly activity: UserActivity,
    registry: ConnectionRegistry,
  ) {
    registry.onRemove((connection) => activity.connectionGone(connection));
  }

  onStatusChange(listener: StatusListener): void {
    this.notices.onStatusChange(listener);
  }

  /**
   * SPEC §8: a user authorized a connection. In cluster mode it resolves once
   * Redis counted it (its status is then known for the hello snapshots).
   */
  authorized(connection: Connection): Promise<void> | void {
    const windowMs = this.config.activity.newConnectionIdleTimeoutMs;
    return this.activity.authorized(connection.identity!, connection.handler.name, windowMs);
  }

  /** One node: the user's status here (SPEC §15.2); null when it has none, and in cluster mode (Redis keeps it). */
  statusOf(userId: string): PresenceStatus | null {
    return this.activity.statusOf(userId);
  }

  /** SPEC §8: a valid call carried `active: N` seconds. */
  touch(userId: string, activeSeconds: number): void {
    const { clientMinIdleTimeoutMs, clientMaxIdleTimeoutMs } = this.config.activity;
    this.activity.touch(userId, clampActiveMs(activeSeconds, clientMinIdleTimeoutMs, clientMaxIdleTimeoutMs));
  }

  /**
   * SPEC §14: a refresh changed `connection`'s authorization object; the
   * user's `session_inactive` (§8) carries the new identity. In cluster mode
   * with connections of the user on several nodes, it carries the identity
   * last written by any of them.
   */
  refreshed(connection: Connection): void {
    this.activity.refreshed(connection.identity!);
  }

  /**
   * Cluster mode, SPEC §12.5: this node took over a resumable session of
   * another node (its count moved here in Redis); `deadlineAt` is the user's
   * deadline there. Nothing is announced: resuming is not activity (§12.2).
   */
  adopted(connection: Connection, deadlineAt: number): void {
    this.activity.adopted(connection.identity!, connection.handler.name, deadlineAt);
  }

  /** Cluster mode: this node's presence is withdrawn before the link closes (SPEC §11 "Drain"). */
  onModuleDestroy(): Promise<void> {
    return this.activity.stop();
  }
}
