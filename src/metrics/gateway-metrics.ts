import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** Upstream request kinds (SPEC §10 label `kind`). */
export type UpstreamKind = 'auth' | 'call' | 'inactive';

/**
 * Every metric of SPEC §10, defined once with its exact name. One registry per
 * app instance (tests run several apps in one process). Label values are
 * bounded: never a topic, user or connection id.
 */
export class GatewayMetrics {
  readonly registry = new Registry();

  readonly connections = new Gauge({ name: 'gateway_connections', help: 'Open WebSocket connections (pending included)', registers: [this.registry] });
  readonly connectionsOpened = new Counter({ name: 'gateway_connections_opened_total', help: 'WebSocket connections accepted', registers: [this.registry] });
  readonly auth = new Counter({ name: 'gateway_auth_total', help: 'Authorization outcomes', labelNames: ['result'] as const, registers: [this.registry] });
  readonly upstreamRequests = new Counter({
    name: 'gateway_upstream_requests_total',
    help: 'Upstream requests by destination, kind and outcome',
    labelNames: ['destination', 'kind', 'outcome'] as const,
    registers: [this.registry],
  });
  readonly upstreamDuration = new Histogram({
    name: 'gateway_upstream_request_duration_seconds',
    help: 'Upstream request duration, queue time included',
    labelNames: ['destination', 'kind'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });
  readonly framesSent = new Counter({ name: 'gateway_frames_sent_total', help: 'Frames sent to clients by type', labelNames: ['type'] as const, registers: [this.registry] });
  readonly clientFrames = new Counter({ name: 'gateway_client_frames_total', help: 'Frames received from clients by outcome', labelNames: ['outcome'] as const, registers: [this.registry] });
  readonly backendApiRequests = new Counter({
    name: 'gateway_backend_api_requests_total',
    help: 'Backend API requests by endpoint and status',
    labelNames: ['endpoint', 'status'] as const,
    registers: [this.registry],
  });
  readonly topics = new Gauge({ name: 'gateway_topics', help: 'Topics with at least one local subscriber', registers: [this.registry] });
  readonly latticeNamespaces = new Gauge({ name: 'gateway_lattice_namespaces', help: 'Lattice namespaces held on this node', registers: [this.registry] });
  readonly slowConsumerCloses = new Counter({ name: 'gateway_slow_consumer_closes_total', help: 'Connections closed as slow consumers', registers: [this.registry] });

  constructor() {
    collectDefaultMetrics({ register: this.registry });
  }
}
