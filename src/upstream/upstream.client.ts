import { Injectable, OnModuleDestroy } from '@nestjs/common';
import * as http from 'node:http';
import * as https from 'node:https';
import { Destination, GatewayConfig } from '../config/gateway-config';
import { GatewayMetrics, UpstreamKind } from '../metrics/gateway-metrics';
import { Route } from './destinations';
import { LaneAgents, createLaneAgents } from './lane-agents';
import { CALL_LANE, FIRST_LANE, Lane, RequestGate, WaitingRequest } from './request-gate';
import { UpstreamResponse, outcomeLabel } from './upstream-response';

/** Per-request headers; the fixed ones are precomputed per destination. */
export interface UpstreamHeaders {
  /** `Gateway+json <B>`, absent on the authorization request. */
  readonly authorization?: string;
  /** Value of the configured request-id header (`<cid>-<request_id>`). */
  readonly requestId?: string;
  /** W3C `traceparent` of the span around this request (tracing on only). */
  readonly traceparent?: string;
}

interface Pool {
  readonly destination: Destination;
  readonly gate: RequestGate;
  /**
   * One keep-alive agent per lane, indexed by Lane. The calls' agent has one
   * socket less than the calls' share, so when a call ends the next one is
   * already queued in it and takes the socket straight over (no trip through
   * the free list, no new agent queue per call).
   */
  readonly agents: LaneAgents;
  readonly request: typeof http.request;
  readonly hostname: string;
  readonly port: number;
  /** Fixed headers as a flat [name, value, …] list, Host included. */
  readonly baseHeaders: readonly string[];
  /** Pre-bound metric children: label lookups stay off the call path. */
  readonly duration: Record<UpstreamKind, { observe(seconds: number): void }>;
  /** Requests counter children by `<kind> <outcome>`, bound on first use. */
  readonly counters: Map<string, { inc(): void }>;
}

type Resolve = (response: UpstreamResponse) => void;

/**
 * A request waiting in its destination's lane for a socket (SPEC §1). Its one
 * timer, armed when it is issued, runs on once it has a socket: `onTimeout`
 * then aborts the exchange.
 */
class QueuedPost extends WaitingRequest {
  timer: NodeJS.Timeout | undefined;
  onTimeout: (() => void) | null = null;

  constructor(
    lane: Lane,
    readonly path: string,
    readonly body: string,
    readonly headers: UpstreamHeaders,
    readonly kind: UpstreamKind,
    readonly startedAt: number,
    readonly resolve: Resolve,
  ) {
    super(lane);
  }
}

/**
 * HTTP POSTs to upstream destinations (SPEC §4.2): one keep-alive agent and one
 * two-lane admission gate per destination, a total timeout counted from issue (queue
 * time included), `Content-Length` bodies, no redirects, no retries. Every
 * outcome is a value; nothing throws.
 *
 * Built on node:http, not axios: the rpc benchmark showed axios's per-request
 * config merging and header objects costing ~30% of the gateway's CPU on the
 * call path (bench/RESULTS.md).
 */
@Injectable()
export class UpstreamClient implements OnModuleDestroy {
  private readonly pools = new Map<string, Pool>();
  private readonly maxResponseBytes: number;

  constructor(
    config: GatewayConfig,
    private readonly metrics: GatewayMetrics,
  ) {
    this.maxResponseBytes = config.limits.maxPayloadBytes;
    for (const destination of config.destinations.values()) {
      this.pools.set(destination.name, createPool(destination, config.version, metrics));
    }
  }

  /** POST `body` (JSON text) to `route`. Resolves with the outcome; never rejects. */
  post(route: Route, body: string, headers: UpstreamHeaders, kind: UpstreamKind): Promise<UpstreamResponse> {
    const pool = this.pools.get(route.destination.name)!;
    const startedAt = performance.now();
    // SPEC §1: authorization and inactivity notices go first; calls wait in a lane of their own.
    const lane = kind === 'call' ? CALL_LANE : FIRST_LANE;
    if (pool.gate.tryRun(lane))
      return new Promise((resolve) =>
        this.start(pool, route.path, body, headers, kind, lane, startedAt, resolve, null),
      );
    if (pool.gate.isFull(lane)) return Promise.resolve(this.record(pool, kind, QUEUE_FULL, startedAt));
    return new Promise((resolve) =>
      this.wait(pool, new QueuedPost(lane, route.path, body, headers, kind, startedAt, resolve)),
    );
  }

  /** Requests waiting or running, over all destinations (shutdown drains on this). */
  get inFlight(): number {
    let total = 0;
    for (const pool of this.pools.values()) total += pool.gate.running + pool.gate.queued;
    return total;
  }

  onModuleDestroy(): void {
    for (const pool of this.pools.values()) for (const agent of pool.agents) agent.destroy();
  }

  /** Queue `queued` in its lane (not full: checked by the caller). Its timer runs from issue (SPEC §1). */
  private wait(pool: Pool, queued: QueuedPost): void {
    pool.gate.enqueue(queued);
    queued.timer = setTimeout(
      () => {
        if (queued.onTimeout !== null) return queued.onTimeout();
        pool.gate.cancel(queued);
        queued.resolve(this.record(pool, queued.kind, TIMEOUT, queued.startedAt));
      },
      pool.destination.timeoutMs - (performance.now() - queued.startedAt),
    );
  }

  /**
   * One exchange holding a socket slot of the gate; `queued` when it waited in
   * a lane (its timer is reused). The total timeout counts from `startedAt`,
   * queue time included (SPEC §1).
   */
  private start(
    pool: Pool,
    path: string,
    body: string,
    headers: UpstreamHeaders,
    kind: UpstreamKind,
    lane: Lane,
    startedAt: number,
    resolve: Resolve,
    queued: QueuedPost | null,
  ): void {
    // A flat [name, value, …] array: Node writes it as is, without a setHeader per header.
    const requestHeaders = pool.baseHeaders.concat('Content-Length', String(Buffer.byteLength(body)));
    if (headers.authorization !== undefined) requestHeaders.push('Authorization', headers.authorization);
    if (headers.requestId !== undefined && pool.destination.requestIdHeader !== null) {
      requestHeaders.push(pool.destination.requestIdHeader, headers.requestId);
    }
    if (headers.traceparent !== undefined) requestHeaders.push('traceparent', headers.traceparent);
    let timer: NodeJS.Timeout | undefined;
    let isFinished = false;
    const finish = (response: UpstreamResponse): void => {
      if (isFinished) return;
      isFinished = true;
      clearTimeout(queued === null ? timer : queued.timer);
      // Started now, in this same turn: the agent still counts the ending socket as busy, so it
      // queues the next request and hands that socket straight to it once it is free.
      const next = pool.gate.release(lane) as QueuedPost | null;
      if (next !== null)
        this.start(pool, next.path, next.body, next.headers, next.kind, next.lane, next.startedAt, next.resolve, next);
      resolve(this.record(pool, kind, response, startedAt));
    };
    const options = {
      agent: pool.agents[lane],
      hostname: pool.hostname,
      port: pool.port,
      method: 'POST',
      path,
      headers: requestHeaders,
    };
    let req: http.ClientRequest;
    try {
      req = pool.request(options, (res) => this.readResponse(req, res, finish));
    } catch (err) {
      // Node refuses a header value synchronously; ours are validated, but the slot must come back.
      // Later, not here: the next queued request must not start inside this stack.
      return queueMicrotask(() => finish({ kind: 'connection_error', reason: (err as Error).message }));
    }
    // A plain timer, not an AbortSignal: the signal's listeners cost ~7% of the call path (bench/RESULTS.md).
    const onTimeout = (): void => {
      finish(TIMEOUT);
      req.destroy();
    };
    if (queued === null) timer = setTimeout(onTimeout, pool.destination.timeoutMs - (performance.now() - startedAt));
    else queued.onTimeout = onTimeout;
    req.on('error', (err) => finish({ kind: 'connection_error', reason: err.message }));
    req.end(body);
  }

  private readResponse(
    req: http.ClientRequest,
    res: http.IncomingMessage,
    resolve: (r: UpstreamResponse) => void,
  ): void {
    const declared = Number(res.headers['content-length']);
    if (declared > this.maxResponseBytes) return tooLarge(req, resolve);
    const chunks: Buffer[] = [];
    let size = 0;
    res.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > this.maxResponseBytes) tooLarge(req, resolve);
      else chunks.push(chunk);
    });
    res.on('end', () => {
      const body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size);
      const headers = res.headers;
      resolve({ kind: 'response', status: res.statusCode ?? 0, contentType: headers['content-type'], body, headers });
    });
    res.on('error', (err) => resolve({ kind: 'connection_error', reason: err.message }));
  }

  /** Count the outcome and its duration; returns `response`. */
  private record(pool: Pool, kind: UpstreamKind, response: UpstreamResponse, startedAt: number): UpstreamResponse {
    const outcome = outcomeLabel(response);
    const key = kind + ' ' + outcome;
    let counter = pool.counters.get(key);
    if (counter === undefined)
      pool.counters.set(key, (counter = this.metrics.upstreamRequests.labels(pool.destination.name, kind, outcome)));
    counter.inc();
    pool.duration[kind].observe((performance.now() - startedAt) / 1000);
    return response;
  }
}

const QUEUE_FULL: UpstreamResponse = { kind: 'queue_full' };
const TIMEOUT: UpstreamResponse = { kind: 'timeout' };

/** MAX_PAYLOAD_BYTES bounds upstream response bodies (SPEC §1): drop the exchange. */
function tooLarge(req: http.ClientRequest, resolve: (r: UpstreamResponse) => void): void {
  resolve({ kind: 'too_large' });
  req.destroy();
}

function createPool(destination: Destination, version: string, metrics: GatewayMetrics): Pool {
  const url = new URL(destination.url);
  const isHttps = url.protocol === 'https:';
  // The gate runs at most maxSockets requests at once, calls at most their share (maxRunningCalls).
  const gate = new RequestGate(destination.maxSockets, destination.queueLimit);
  // One of the calls' places is a place in their agent's queue, not a socket: under load one
  // call always waits there, so an ending call's socket goes straight to it and the agent's
  // queue never empties. Run through the gate one by one instead, each call made the agent
  // rebuild its queue and cost ~10% more CPU per call (bench/RESULTS.md, session 6). A freed
  // place still goes to the first lane first: the gate decides who takes it.
  const callSockets = Math.max(1, gate.maxRunningCalls - 1);
  // With array headers Node adds no Host header of its own.
  const host = destination.overrideHostHeader ?? url.host;
  const baseHeaders = ['Host', host, 'Content-Type', 'application/json', 'User-Agent', `gateway/${version}`];
  const histogram = metrics.upstreamDuration;
  return {
    destination,
    gate,
    // Idle sockets of either lane stay while the destination's open connections are within maxSockets.
    agents: createLaneAgents(
      isHttps,
      destination.maxSockets,
      { maxSockets: destination.maxSockets, maxFreeSockets: destination.maxSockets },
      { maxSockets: callSockets, maxFreeSockets: callSockets },
    ),
    request: isHttps ? https.request : http.request,
    hostname: url.hostname.replace(/^\[|\]$/g, ''),
    port: Number(url.port) || (isHttps ? 443 : 80),
    baseHeaders,
    counters: new Map(),
    duration: {
      auth: histogram.labels(destination.name, 'auth'),
      call: histogram.labels(destination.name, 'call'),
      inactive: histogram.labels(destination.name, 'inactive'),
    },
  };
}
