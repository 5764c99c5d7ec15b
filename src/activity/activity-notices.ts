import { Injectable, Logger } from '@nestjs/common';
import { GatewayConfig } from '../config/gateway-config';
import { SESSION_INACTIVE_METHOD } from '../upstream/destinations';
import { UpstreamClient } from '../upstream/upstream.client';
import { UpstreamRoutes } from '../upstream/upstream-routes';
import { ActivityEvents, PresenceStatus } from './user-activity';

/** `atMs`: the status register's version (epoch ms; Redis time in cluster mode). */
export type StatusListener = (userId: string, status: PresenceStatus, atMs: number) => void;

const INACTIVE_BODY = '[{},[],{}]';

/** Where activity's events go: status changes to their listeners (presence), inactivity to the backend (SPEC §8). */
@Injectable()
export class ActivityNotices implements ActivityEvents {
  private readonly logger = new Logger(ActivityNotices.name);
  private readonly listeners: StatusListener[] = [];

  constructor(
    private readonly config: GatewayConfig,
    private readonly upstream: UpstreamClient,
    private readonly routes: UpstreamRoutes,
  ) {}

  onStatusChange(listener: StatusListener): void {
    this.listeners.push(listener);
  }

  announce(userId: string, status: PresenceStatus, atMs: number): void {
    for (const listener of this.listeners) listener(userId, status, atMs);
  }

  /** SPEC §8: one `session_inactive`; response ignored, no retry. */
  inactive(userId: string, authorization: string, handlerName: string): void {
    if (!this.config.activity.shouldNotifyInactive) return;
    const handler = this.config.handlers.find((h) => h.name === handlerName) ?? this.config.handlers[0];
    const route = this.routes.tableFor(handler).route(SESSION_INACTIVE_METHOD);
    // post() never throws.
    void this.upstream.post(route, INACTIVE_BODY, { authorization }, 'inactive');
    this.logger.debug({ msg: 'session inactive', user_id: userId });
  }
}
