import { Injectable, OnModuleDestroy } from '@nestjs/common';
import { Attributes, ROOT_CONTEXT, Span, SpanKind, SpanStatusCode, Tracer, defaultTextMapGetter } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { AlwaysOffSampler, AlwaysOnSampler, BasicTracerProvider, BatchSpanProcessor, ParentBasedSampler, Sampler, TraceIdRatioBasedSampler } from '@opentelemetry/sdk-trace-base';
import type { IncomingHttpHeaders } from 'node:http';
import { GatewayConfig } from '../config/gateway-config';
import { TracingSettings } from './tracing-settings';

/** A span around one upstream exchange; `traceparent` goes on the upstream request (W3C). */
export class UpstreamSpan {
  readonly traceparent: string;

  constructor(private readonly span: Span) {
    const context = span.spanContext();
    this.traceparent = `00-${context.traceId}-${context.spanId}-0${context.traceFlags & 1}`;
  }

  /** `outcome` is `ok` or the error kind; `status` the backend's HTTP status when it answered. */
  end(outcome: string, status?: number): void {
    this.span.setAttribute('gateway.outcome', outcome);
    if (status !== undefined) this.span.setAttribute('http.response.status_code', status);
    if (outcome !== 'ok') this.span.setStatus({ code: SpanStatusCode.ERROR, message: outcome });
    this.span.end();
  }
}

/**
 * OpenTelemetry tracing at the call path's seams (issue 21): a span per client
 * call and per authorization (kind CLIENT, carrying `traceparent` upstream), and
 * per `/v1` request (kind SERVER, continuing an incoming `traceparent`). Spans
 * carry ids, methods, destinations, outcomes and statuses: never bodies.
 *
 * Off unless OTEL_EXPORTER_OTLP_ENDPOINT is set: callers test `isEnabled`, decided
 * once at start, and then call nothing here. Our own spans, not the generic http
 * instrumentation, which would rewrite the upstream client's flat header array.
 */
@Injectable()
export class GatewayTracer implements OnModuleDestroy {
  readonly isEnabled: boolean;
  private readonly provider: BasicTracerProvider | null = null;
  private readonly tracer: Tracer | null = null;
  private readonly propagator = new W3CTraceContextPropagator();

  constructor(config: GatewayConfig) {
    const settings = config.tracing;
    this.isEnabled = settings.tracesUrl !== null;
    if (settings.tracesUrl === null) return;
    this.provider = new BasicTracerProvider({
      resource: resourceFromAttributes({ 'service.name': settings.serviceName, 'service.version': config.version, 'service.instance.id': config.nodeId }),
      sampler: samplerOf(settings),
      spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: settings.tracesUrl }), { scheduledDelayMillis: settings.scheduleDelayMs })],
    });
    this.tracer = this.provider.getTracer('lattice-gateway', config.version);
  }

  /** A client call `[method, …]` from connection `connectionId` to `destination`. Only when enabled. */
  startCall(connectionId: string, method: string, destination: string): UpstreamSpan {
    const attributes = { 'rpc.method': method, 'gateway.destination': destination, 'gateway.connection_id': connectionId };
    return new UpstreamSpan(this.tracer!.startSpan('gateway.call', { kind: SpanKind.CLIENT, attributes }));
  }

  /** The authorization request of a new connection (SPEC §3). Only when enabled. */
  startAuthorization(connectionId: string, destination: string): UpstreamSpan {
    const attributes = { 'gateway.destination': destination, 'gateway.connection_id': connectionId };
    return new UpstreamSpan(this.tracer!.startSpan('gateway.authorize', { kind: SpanKind.CLIENT, attributes }));
  }

  /**
   * A `/v1` request: a SERVER span named by its endpoint shape, child of the
   * request's `traceparent` when it carries one, ended when the answer is sent.
   * Only when enabled.
   */
  traceApiRequest(method: string, endpoint: string, headers: IncomingHttpHeaders, response: NodeJS.EventEmitter & { statusCode: number }): void {
    const parent = this.propagator.extract(ROOT_CONTEXT, headers, defaultTextMapGetter);
    const attributes: Attributes = { 'http.request.method': method, 'gateway.endpoint': endpoint };
    const span = this.tracer!.startSpan(`${method} ${endpoint}`, { kind: SpanKind.SERVER, attributes }, parent);
    response.once('finish', () => {
      span.setAttribute('http.response.status_code', response.statusCode);
      if (response.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    });
  }

  /** Export what is buffered before the app stops. */
  async onModuleDestroy(): Promise<void> {
    await this.provider?.shutdown();
  }
}

function samplerOf(settings: TracingSettings): Sampler {
  const root = settings.sampleRatio >= 1 ? new AlwaysOnSampler() : settings.sampleRatio <= 0 ? new AlwaysOffSampler() : new TraceIdRatioBasedSampler(settings.sampleRatio);
  return settings.isParentBased ? new ParentBasedSampler({ root }) : root;
}
