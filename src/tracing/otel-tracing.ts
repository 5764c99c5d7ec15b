import {
  Attributes,
  ROOT_CONTEXT,
  Span,
  SpanKind,
  SpanStatusCode,
  Tracer,
  defaultTextMapGetter,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BasicTracerProvider,
  BatchSpanProcessor,
  ParentBasedSampler,
  Sampler,
  TraceIdRatioBasedSampler,
} from '@opentelemetry/sdk-trace-base';
import type { IncomingHttpHeaders } from 'node:http';
import { TracingSettings } from './tracing-settings';

/** A span around one upstream exchange; `traceparent` goes on the upstream request (W3C). */
export class UpstreamSpan {
  readonly traceparent: string;
  /** For log lines about this exchange (`trace_id`). */
  readonly traceId: string;

  constructor(private readonly span: Span) {
    const context = span.spanContext();
    this.traceId = context.traceId;
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

/** What a node is, for the spans' resource. */
export interface ServiceIdentity {
  readonly version: string;
  readonly nodeId: string;
}

/**
 * The OpenTelemetry SDK side of tracing: a tracer provider with a batch OTLP/HTTP
 * JSON exporter, and the three kinds of span the gateway makes. Loaded only when
 * tracing is on (gateway-tracer.ts), so a gateway without it never loads the SDK.
 */
export class OtelTracing {
  private readonly provider: BasicTracerProvider;
  private readonly tracer: Tracer;
  private readonly propagator = new W3CTraceContextPropagator();

  constructor(settings: TracingSettings & { tracesUrl: string }, service: ServiceIdentity) {
    this.provider = new BasicTracerProvider({
      resource: resourceFromAttributes({
        'service.name': settings.serviceName,
        'service.version': service.version,
        'service.instance.id': service.nodeId,
      }),
      sampler: samplerOf(settings),
      spanProcessors: [
        new BatchSpanProcessor(new OTLPTraceExporter({ url: settings.tracesUrl }), {
          scheduledDelayMillis: settings.scheduleDelayMs,
        }),
      ],
    });
    this.tracer = this.provider.getTracer('lattice-gateway', service.version);
  }

  startCall(connectionId: string, method: string, destination: string): UpstreamSpan {
    const attributes = {
      'rpc.method': method,
      'gateway.destination': destination,
      'gateway.connection_id': connectionId,
    };
    return new UpstreamSpan(this.tracer.startSpan('gateway.call', { kind: SpanKind.CLIENT, attributes }));
  }

  startAuthorization(connectionId: string, destination: string): UpstreamSpan {
    const attributes = { 'gateway.destination': destination, 'gateway.connection_id': connectionId };
    return new UpstreamSpan(this.tracer.startSpan('gateway.authorize', { kind: SpanKind.CLIENT, attributes }));
  }

  traceApiRequest(
    method: string,
    endpoint: string,
    headers: IncomingHttpHeaders,
    response: NodeJS.EventEmitter & { statusCode: number },
  ): void {
    const parent = this.propagator.extract(ROOT_CONTEXT, headers, defaultTextMapGetter);
    const attributes: Attributes = { 'http.request.method': method, 'gateway.endpoint': endpoint };
    const span = this.tracer.startSpan(`${method} ${endpoint}`, { kind: SpanKind.SERVER, attributes }, parent);
    response.once('finish', () => {
      span.setAttribute('http.response.status_code', response.statusCode);
      if (response.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    });
  }

  /** Export what is buffered, then stop. */
  shutdown(): Promise<void> {
    return this.provider.shutdown();
  }
}

function samplerOf(settings: TracingSettings): Sampler {
  const root =
    settings.sampleRatio >= 1
      ? new AlwaysOnSampler()
      : settings.sampleRatio <= 0
        ? new AlwaysOffSampler()
        : new TraceIdRatioBasedSampler(settings.sampleRatio);
  return settings.isParentBased ? new ParentBasedSampler({ root }) : root;
}
