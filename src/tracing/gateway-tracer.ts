import { Injectable, OnModuleDestroy } from '@nestjs/common';
import type { IncomingHttpHeaders } from 'node:http';
import { GatewayConfig } from '../config/gateway-config';
import type { OtelTracing, UpstreamSpan } from './otel-tracing';

export type { UpstreamSpan };

/**
 * OpenTelemetry tracing at the call path's seams (issue 21): a span per client
 * call and per authorization (kind CLIENT, carrying `traceparent` upstream), and
 * per `/v1` request (kind SERVER, continuing an incoming `traceparent`). Spans
 * carry ids, methods, destinations, outcomes and statuses: never bodies.
 *
 * Off unless OTEL_EXPORTER_OTLP_ENDPOINT is set: callers test `isEnabled`, decided
 * once at start, and then call nothing here; the SDK (otel-tracing.ts, ~18 MB
 * and most of a second to load) is not even loaded. Our own spans, not the
 * generic http instrumentation, which would rewrite the upstream client's flat
 * header array.
 */
@Injectable()
export class GatewayTracer implements OnModuleDestroy {
  readonly isEnabled: boolean;
  private readonly otel: OtelTracing | null = null;

  constructor(config: GatewayConfig) {
    const settings = config.tracing;
    this.isEnabled = settings.tracesUrl !== null;
    if (settings.tracesUrl === null) return;
    // Loaded here, not imported at the top: only a node with tracing on pays for the SDK.
    const { OtelTracing: Tracing } = require('./otel-tracing') as typeof import('./otel-tracing');
    this.otel = new Tracing({ ...settings, tracesUrl: settings.tracesUrl }, config);
  }

  /** A client call `[method, …]` from connection `connectionId` to `destination`. Only when enabled. */
  startCall(connectionId: string, method: string, destination: string): UpstreamSpan {
    return this.otel!.startCall(connectionId, method, destination);
  }

  /** The authorization request of a new connection (SPEC §3). Only when enabled. */
  startAuthorization(connectionId: string, destination: string): UpstreamSpan {
    return this.otel!.startAuthorization(connectionId, destination);
  }

  /**
   * A `/v1` request: a SERVER span named by its endpoint label, child of the
   * request's `traceparent` when it carries one, ended when the answer is sent.
   * Only when enabled.
   */
  traceApiRequest(
    method: string,
    endpoint: string,
    headers: IncomingHttpHeaders,
    response: NodeJS.EventEmitter & { statusCode: number },
  ): void {
    this.otel!.traceApiRequest(method, endpoint, headers, response);
  }

  /** Export what is buffered before the app stops. */
  async onModuleDestroy(): Promise<void> {
    await this.otel?.shutdown();
  }
}
