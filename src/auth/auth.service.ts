import { Injectable, Logger } from '@nestjs/common';
import { Connection } from '../connections/connection';
import { GatewayMetrics } from '../metrics/gateway-metrics';
import { UpstreamClient } from '../upstream/upstream.client';
import { UpstreamRoutes } from '../upstream/upstream-routes';
import { AUTHORIZE_METHOD } from '../upstream/destinations';
import { AuthOutcome, authOutcome } from './auth-response';
import { GatewayTracer } from '../tracing/gateway-tracer';
import { failureCause, outcomeLabel } from '../upstream/upstream-response';

/** What the client's upgrade request carried (SPEC §3 kwargs). */
export interface AuthRequest {
  readonly cookie: string | null;
  readonly authorization: string | null;
  readonly queryString: string;
}

/** Asks the backend who a new connection is (SPEC §3). Never throws for HTTP outcomes. */
@Injectable()
export class AuthService {
  private readonly logger = new Logger(AuthService.name);

  constructor(
    private readonly upstream: UpstreamClient,
    private readonly routes: UpstreamRoutes,
    private readonly metrics: GatewayMetrics,
    private readonly tracer: GatewayTracer,
  ) {}

  async authorize(connection: Connection, request: AuthRequest): Promise<AuthOutcome> {
    const route = this.routes.tableFor(connection.handler).route(AUTHORIZE_METHOD);
    const kwargs = {
      http_cookie: request.cookie,
      http_authorization: request.authorization,
      url_querystring: request.queryString,
    };
    const body = JSON.stringify([{ connection_id: connection.id }, [], kwargs]);
    const span = this.tracer.isEnabled ? this.tracer.startAuthorization(connection.id, route.destination.name) : null;
    const response = await this.upstream.post(
      route,
      body,
      { requestId: `${connection.id}-auth`, traceparent: span?.traceparent },
      'auth',
    );
    const outcome = authOutcome(response);
    span?.end(outcome.ok ? 'ok' : outcome.reason, response.kind === 'response' ? response.status : undefined);
    // The upstream metric's label form (http_401, timeout, …); a 200 the gateway cannot use is invalid_response.
    const upstreamOutcome = outcomeLabel(response);
    this.metrics.auth.labels(outcome.ok ? 'ok' : upstreamOutcome === 'ok' ? 'invalid_response' : upstreamOutcome).inc();
    if (!outcome.ok) {
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
}
