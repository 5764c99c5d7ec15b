import { Injectable, Logger } from '@nestjs/common';
import { Connection } from '../connections/connection';
import { GatewayMetrics } from '../metrics/gateway-metrics';
import { UpstreamClient } from '../upstream/upstream.client';
import { UpstreamRoutes } from '../upstream/upstream-routes';
import { AUTHORIZE_METHOD, REFRESH_METHOD } from '../upstream/destinations';
import { GatewayConfig } from '../config/gateway-config';
import { LivedAuthOutcome, RefreshOutcome, livedAuthOutcome, refreshOutcome } from './auth-lifetime';
import { GatewayTracer } from '../tracing/gateway-tracer';
import { failureCause, outcomeLabel } from '../upstream/upstream-response';
import { AuthRequest, authorizationBody } from './authorization-body';

export type { AuthRequest };

/** Asks the backend who a new connection is (SPEC §3). Never throws for HTTP outcomes. */
@Injectable()
export class AuthService {
  private readonly logger = new Logger(AuthService.name);
  /** The counter of successful authorizations, bound once: the connect path does no label lookup. */
  private readonly authorized;

  constructor(
    private readonly upstream: UpstreamClient,
    private readonly routes: UpstreamRoutes,
    private readonly metrics: GatewayMetrics,
    private readonly tracer: GatewayTracer,
    private readonly config: GatewayConfig,
  ) {
    this.authorized = metrics.auth.labels('ok');
  }

  async authorize(connection: Connection, request: AuthRequest): Promise<LivedAuthOutcome> {
    const route = this.routes.tableFor(connection.handler).route(AUTHORIZE_METHOD);
    const body = authorizationBody(connection.id, request);
    const span = this.tracer.isEnabled ? this.tracer.startAuthorization(connection.id, route.destination.name) : null;
    const response = await this.upstream.post(
      route,
      body,
      { requestId: `${connection.id}-auth`, traceparent: span?.traceparent },
      'auth',
    );
    // SPEC §14: the answer's Gateway-Auth-TTL is read with it (an invalid one makes it invalid).
    const outcome = livedAuthOutcome(response, this.config.authLifetime);
    span?.end(outcome.ok ? 'ok' : outcome.reason, response.kind === 'response' ? response.status : undefined);
    if (outcome.ok) {
      this.authorized.inc();
    } else {
      // The upstream metric's label form (http_401, timeout, …); a 200 the gateway cannot use is invalid_response.
      const upstreamOutcome = outcomeLabel(response);
      this.metrics.auth.labels(upstreamOutcome === 'ok' ? 'invalid_response' : upstreamOutcome).inc();
      const name = route.destination.name;
      const cause = failureCause(response);
      this.logger.warn({
        msg: 'authorization failed',
        connection_id: connection.id,
        destination: name,
        url: route.url,
        cause,
        reason: outcome.reason,
        trace_id: span?.traceId,
      });
    }
    return outcome;
  }

  /**
   * SPEC §14: ask the backend whether `connection`'s user may go on, with its
   * identity header, in the first request lane. A failure (to be retried) is
   * logged with its cause, never the body.
   */
  async refresh(connection: Connection): Promise<RefreshOutcome> {
    const route = this.routes.tableFor(connection.handler).route(REFRESH_METHOD);
    const identity = connection.identity!;
    const body = '[{"connection_id":' + JSON.stringify(connection.id) + '},[],{}]';
    const headers = { authorization: identity.authorization, requestId: `${connection.id}-refresh` };
    const response = await this.upstream.post(route, body, headers, 'auth');
    const outcome = refreshOutcome(response, identity.userId, identity.json, this.config.authLifetime);
    if (outcome.kind === 'failed' || outcome.kind === 'refused') {
      this.logger.warn({
        msg: outcome.kind === 'failed' ? 'authorization refresh failed' : 'authorization refresh refused',
        connection_id: connection.id,
        destination: route.destination.name,
        url: route.url,
        cause: failureCause(response),
        reason: outcome.reason,
      });
    }
    return outcome;
  }
}
