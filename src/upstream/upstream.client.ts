import { Injectable, OnModuleDestroy } from '@nestjs/common';
import * as http from 'node:http';
import * as https from 'node:https';
import { Destination, GatewayConfig } from '../config/gateway-config';
import { GatewayMetrics, UpstreamKind } from '../metrics/gateway-metrics';
import { Route } from './destinations';
import { RequestGate } from './request-gate';
import { UpstreamResponse, outcomeLabel } from './upstream-response';

/** Per-request headers; the fixed ones are precomputed per destination. */
export interface UpstreamHeaders {
  /** `Gateway+json <B>`, absent on the authorization request. */
  readonly authorization?: string;
  /** Value of the configured request-id header (`<cid>-<request_id>`). */
  readonly requestId?: string;
}

interface Pool {
  readonly destination: Destination;
  readonly gate: RequestGate;
  readonly agent: http.Agent;
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

/**
 * HTTP POSTs to upstream destinations (SPEC §4.2): one keep-alive agent and one
 * admission gate per destination, a total timeout counted from issue (queue
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
    if (!pool.gate.tryAdmit()) return Promise.resolve(this.record(pool, kind, QUEUE_FULL, startedAt));
    return this.send(pool, route.path, body, headers, kind, startedAt);
  }

  /** Requests waiting or running, over all destinations (shutdown drains on this). */
  get inFlight(): number {
    let total = 0;
    for (const pool of this.pools.values()) total += pool.gate.running + pool.gate.queued;
    return total;
  }

  onModuleDestroy(): void {
    for (const pool of this.pools.values()) pool.agent.destroy();
  }

  /**
   * One exchange, admitted: it may wait in the agent's queue for a socket. Its
   * timer runs from `startedAt`, so queue time counts toward the timeout (SPEC §1).
   */
  private send(pool: Pool, path: string, body: string, headers: UpstreamHeaders, kind: UpstreamKind, startedAt: number): Promise<UpstreamResponse> {
    // A flat [name, value, …] array: Node writes it as is, without a setHeader per header.
    const requestHeaders = pool.baseHeaders.concat('Content-Length', String(Buffer.byteLength(body)));
    if (headers.authorization !== undefined) requestHeaders.push('Authorization', headers.authorization);
    if (headers.requestId !== undefined && pool.destination.requestIdHeader !== null) {
      requestHeaders.push(pool.destination.requestIdHeader, headers.requestId);
    }
    return new Promise<UpstreamResponse>((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      let isFinished = false;
      const finish = (response: UpstreamResponse): void => {
        if (isFinished) return;
        isFinished = true;
        clearTimeout(timer);
        pool.gate.release();
        resolve(this.record(pool, kind, response, startedAt));
      };
      const options = { agent: pool.agent, hostname: pool.hostname, port: pool.port, method: 'POST', path, headers: requestHeaders };
      let req: http.ClientRequest;
      try {
        req = pool.request(options, (res) => this.readResponse(req, res, finish));
      } catch (err) {
        // Node refuses a header value synchronously; ours are validated, but the slot must come back.
        return finish({ kind: 'connection_error', reason: (err as Error).message });
      }
      // A plain timer, not an AbortSignal: the signal's listeners cost ~7% of the call path (bench/RESULTS.md).
      // Destroying a request still queued in the agent is safe: when its turn comes it hands the socket on.
      timer = setTimeout(() => {
        finish(TIMEOUT);
        req.destroy();
      }, pool.destination.timeoutMs - (performance.now() - startedAt));
      req.on('error', (err) => finish({ kind: 'connection_error', reason: err.message }));
      req.end(body);
    });
  }

  private readResponse(req: http.ClientRequest, res: http.IncomingMessage, resolve: (r: UpstreamResponse) => void): void {
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
      resolve({ kind: 'response', status: res.statusCode ?? 0, contentType: res.headers['content-type'], body });
    });
    res.on('error', (err) => resolve({ kind: 'connection_error', reason: err.message }));
  }

  /** Count the outcome and its duration; returns `response`. */
  private record(pool: Pool, kind: UpstreamKind, response: UpstreamResponse, startedAt: number): UpstreamResponse {
    const outcome = outcomeLabel(response);
    const key = kind + ' ' + outcome;
    let counter = pool.counters.get(key);
    if (counter === undefined) pool.counters.set(key, (counter = this.metrics.upstreamRequests.labels(pool.destination.name, kind, outcome)));
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
  // The agent queues requests beyond maxSockets itself (RequestGate only counts them).
  const agentOptions = { keepAlive: true, maxSockets: destination.maxSockets, maxFreeSockets: destination.maxSockets };
  // With array headers Node adds no Host header of its own.
  const host = destination.overrideHostHeader ?? url.host;
  const baseHeaders = ['Host', host, 'Content-Type', 'application/json', 'User-Agent', `gateway/${version}`];
  const histogram = metrics.upstreamDuration;
  return {
    destination,
    gate: new RequestGate(destination.maxSockets, destination.queueLimit),
    agent: isHttps ? new https.Agent(agentOptions) : new http.Agent(agentOptions),
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
