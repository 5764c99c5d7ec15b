import { Counter, Gauge, Histogram, Metric, Registry, collectDefaultMetrics } from 'prom-client';
import { TalliedCounter } from './tallied-counter';

/** Upstream request kinds (SPEC §10 label `kind`). */
export type UpstreamKind = 'auth' | 'call' | 'inactive';

/**
 * Every metric of SPEC §10, defined once with its exact name. One registry per
 * app instance (tests run several apps in one process). Label values are
 * bounded: never a topic, user or connection id. One event has one label
 * value everywhere: an upstream answer other than 200 is `http_<status>`
 * (`gateway_auth_total{result}` and `gateway_upstream_requests_total{outcome}`
 * alike), a transport outcome its kind (`timeout`, `connection_error`, …).
 */
export class GatewayMetrics {
  readonly registry = new Registry();

  readonly connections = new Gauge({
    name: 'gateway_connections',
    help: 'Open WebSocket connections (pending included)',
    registers: [this.registry],
  });
  /** MAX_CONNECTIONS, so that an alert can compare `gateway_connections` with it (deploy/prometheus/alerts.yml). */
  readonly connectionsLimit = new Gauge({
    name: 'gateway_connections_limit',
    help: 'MAX_CONNECTIONS: open WebSockets allowed on this node',
    registers: [this.registry],
  });
  readonly connectionsOpened = new Counter({
    name: 'gateway_connections_opened_total',
    help: 'WebSocket connections accepted',
    registers: [this.registry],
  });
  readonly auth = new TalliedCounter({
    name: 'gateway_auth_total',
    help: 'Authorization outcomes',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });
  /** SPEC §14: refresh answers (`failed` counts each attempt that will be retried or gives up). */
  readonly authRefreshes = new TalliedCounter({
    name: 'gateway_auth_refreshes_total',
    help: 'Authorization refreshes by result: ok, changed, refused, failed',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });
  readonly upstreamRequests = new TalliedCounter({
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
  readonly framesSent = new TalliedCounter({
    name: 'gateway_frames_sent_total',
    help: 'Frames sent to clients by type',
    labelNames: ['type'] as const,
    registers: [this.registry],
  });
  readonly clientFrames = new TalliedCounter({
    name: 'gateway_client_frames_total',
    help: 'Frames received from clients by outcome',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  readonly backendApiRequests = new TalliedCounter({
    name: 'gateway_backend_api_requests_total',
    help: 'Backend API requests by endpoint and status',
    labelNames: ['endpoint', 'status'] as const,
    registers: [this.registry],
  });
  readonly topics = new Gauge({
    name: 'gateway_topics',
    help: 'Topics with at least one local subscriber',
    registers: [this.registry],
  });
  readonly latticeNamespaces = new Gauge({
    name: 'gateway_lattice_namespaces',
    help: 'Lattice namespaces held on this node',
    registers: [this.registry],
  });
  readonly handshakesRefused = new TalliedCounter({
    name: 'gateway_handshakes_refused_total',
    help: 'WebSocket handshakes refused before the upgrade, by reason: path (404), subprotocol (400), origin (403), limit (503), resume_rate (429)',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  readonly slowConsumerCloses = new Counter({
    name: 'gateway_slow_consumer_closes_total',
    help: 'Connections closed as slow consumers',
    registers: [this.registry],
  });

  // Resumable sessions and topic history (SPEC §12.8).
  readonly sessionsDetached = new Gauge({
    name: 'gateway_sessions_detached',
    help: 'Resumable sessions waiting for their client (SPEC §12.2)',
    registers: [this.registry],
  });
  readonly resumes = new TalliedCounter({
    name: 'gateway_resumes_total',
    help: 'Resume attempts by result: resumed, expired (the session had ended), invalid (unknown token or unreadable offer)',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });
  readonly replayedMessages = new Counter({
    name: 'gateway_replayed_messages_total',
    help: 'Topic messages replayed to resumed sessions',
    registers: [this.registry],
  });
  readonly lostTopics = new Counter({
    name: 'gateway_lost_topics_total',
    help: 'Topics reported lost to resumed sessions (history no longer held)',
    registers: [this.registry],
  });
  readonly topicHistoryMessages = new Gauge({
    name: 'gateway_topic_history_messages',
    help: 'Messages held in topic histories (single node)',
    registers: [this.registry],
  });

  // Cluster mode (SPEC §11) only: not exported by a single node (issue 20), where
  // `gateway_redis_up 0` would fire every "Redis down" alert. Registered by the constructor.
  readonly redisUp = new Gauge({
    name: 'gateway_redis_up',
    help: '1 while both connections of a Redis link are ready (cluster mode; shard: control = REDIS_URL, 1…N = REDIS_SHARDS)',
    labelNames: ['shard'] as const,
    registers: [],
  });
  readonly redisReconnects = new Counter({
    name: 'gateway_redis_reconnects_total',
    help: 'Redis connection attempts after a loss',
    registers: [],
  });
  readonly redisFailovers = new Counter({
    name: 'gateway_redis_failovers_total',
    help: 'Primary changes this node saw (Redis Sentinel, SPEC §13.2)',
    registers: [],
  });
  readonly redisCommandDuration = new Histogram({
    name: 'gateway_redis_command_duration_seconds',
    help: 'Redis command round trips by command and link (shard: control = REDIS_URL, 1…N = REDIS_SHARDS)',
    labelNames: ['command', 'shard'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5],
    registers: [],
  });
  readonly brokerMessages = new TalliedCounter({
    name: 'gateway_broker_messages_total',
    help: 'Messages between nodes by direction (in, out) and kind (topic, lattice, user, command, ack)',
    labelNames: ['direction', 'kind'] as const,
    registers: [],
  });
  readonly brokerMessagesDropped = new Counter({
    name: 'gateway_broker_messages_dropped_total',
    help: 'Messages for other nodes not sent because the Redis link was down (at most once, SPEC §11)',
    registers: [],
  });
  readonly redisRollbacks = new Counter({
    name: 'gateway_redis_rollbacks_total',
    help: 'Times Redis came back with less than it had acknowledged (restart from an older snapshot, failover to a lagging replica; SPEC §13.1)',
    registers: [],
  });
  readonly latticeRepairs = new Counter({
    name: 'gateway_lattice_repairs_total',
    help: 'Namespaces re-read from Redis after a missed update or a reconnect',
    registers: [],
  });

  /** `isCluster`: REDIS_URL is set; only then are the cluster metrics exported. */
  constructor(isCluster = true) {
    collectDefaultMetrics({ register: this.registry });
    if (!isCluster) return;
    const clusterMetrics: Metric<string>[] = [
      this.redisUp,
      this.redisReconnects,
      this.redisFailovers,
      this.redisCommandDuration,
      this.brokerMessages,
      this.brokerMessagesDropped,
      this.latticeRepairs,
      this.redisRollbacks,
    ];
    for (const metric of clusterMetrics) this.registry.registerMetric(metric);
  }
}
