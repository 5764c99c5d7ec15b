import { HttpService } from '@nestjs/axios';
import { Injectable, OnModuleDestroy } from '@nestjs/common';
import { AxiosError, AxiosInstance, AxiosRequestConfig } from 'axios';
import * as http from 'node:http';
import * as https from 'node:https';
import { Destination, GatewayConfig } from '../config/gateway-config';
import { GatewayMetrics, UpstreamKind } from '../metrics/gateway-metrics';
import { RequestGate } from './request-gate';
import { UpstreamResponse } from './upstream-response';

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
  readonly baseHeaders: Readonly<Record<string, string>>;
  /** Fixed axios options of this destination: agent, limits, raw body. */
  readonly requestBase: Readonly<AxiosRequestConfig<string>>;
}

/**
 * HTTP POSTs to upstream destinations (SPEC §4.2): one keep-alive agent and one
 * admission gate per destination, a total timeout counted from issue (queue
 * time included), no retries. Every outcome is a value; nothing throws.
 */
@Injectable()
export class UpstreamClient implements OnModuleDestroy {
  private readonly pools = new Map<string, Pool>();
  private readonly axios: AxiosInstance;

  constructor(http: HttpService, config: GatewayConfig, private readonly metrics: GatewayMetrics) {
    this.axios = http.axiosRef;
    for (const destination of config.destinations.values()) {
      this.pools.set(destination.name, createPool(destination, config.version, config.limits.maxPayloadBytes));
    }
  }

  /** POST `body` (JSON text) to `url` of `destination`. */
  async post(destination: Destination, url: string, body: string, headers: UpstreamHeaders, kind: UpstreamKind): Promise<UpstreamResponse> {
    const pool = this.pools.get(destination.name)!;
    const startedAt = performance.now();
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), destination.timeoutMs);
    let response: UpstreamResponse;
    try {
      const admitted = await pool.gate.acquire(abort.signal);
      if (!admitted) response = abort.signal.aborted ? { kind: 'timeout' } : { kind: 'queue_full' };
      else response = await this.send(pool, url, body, headers, abort.signal).finally(() => pool.gate.release());
    } finally {
      clearTimeout(timer);
    }
    this.record(destination.name, kind, response, startedAt);
    return response;
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

  private async send(pool: Pool, url: string, body: string, headers: UpstreamHeaders, signal: AbortSignal): Promise<UpstreamResponse> {
    const requestHeaders: Record<string, string> = { ...pool.baseHeaders };
    if (headers.authorization !== undefined) requestHeaders.Authorization = headers.authorization;
    if (headers.requestId !== undefined && pool.destination.requestIdHeader !== null) {
      requestHeaders[pool.destination.requestIdHeader] = headers.requestId;
    }
    const request: AxiosRequestConfig<string> = { ...pool.requestBase, url, data: body, headers: requestHeaders, signal };
    try {
      const res = await this.axios.request<Buffer>(request);
      const contentType = res.headers['content-type'];
      return { kind: 'response', status: res.status, contentType: typeof contentType === 'string' ? contentType : undefined, body: res.data };
    } catch (err) {
      if (signal.aborted) return { kind: 'timeout' };
      if (err instanceof AxiosError && /maxContentLength/.test(err.message)) return { kind: 'too_large' };
      return { kind: 'connection_error', reason: err instanceof Error ? err.message : String(err) };
    }
  }

  private record(destination: string, kind: UpstreamKind, response: UpstreamResponse, startedAt: number): void {
    const outcome = response.kind === 'response' ? (response.status === 200 ? 'ok' : 'http_' + response.status) : response.kind;
    this.metrics.upstreamRequests.labels(destination, kind, outcome).inc();
    this.metrics.upstreamDuration.labels(destination, kind).observe((performance.now() - startedAt) / 1000);
  }
}

function createPool(destination: Destination, version: string, maxPayloadBytes: number): Pool {
  const isHttps = destination.url.startsWith('https:');
  const agentOptions = { keepAlive: true, maxSockets: destination.maxSockets, maxFreeSockets: destination.maxSockets };
  const agent = isHttps ? new https.Agent(agentOptions) : new http.Agent(agentOptions);
  const baseHeaders: Record<string, string> = { 'Content-Type': 'application/json', 'User-Agent': `gateway/${version}` };
  if (destination.overrideHostHeader !== null) baseHeaders.Host = destination.overrideHostHeader;
  const requestBase: AxiosRequestConfig<string> = {
    method: 'POST',
    [isHttps ? 'httpsAgent' : 'httpAgent']: agent,
    proxy: false,
    maxRedirects: 0, // no redirects: axios then uses plain http(s), not follow-redirects
    maxContentLength: maxPayloadBytes, // SPEC §1: MAX_PAYLOAD_BYTES bounds upstream response bodies
    maxBodyLength: Infinity,
    responseType: 'arraybuffer',
    transformResponse: (data: Buffer) => data,
    validateStatus: () => true,
  };
  return { destination, gate: new RequestGate(destination.maxSockets, destination.queueLimit), agent, baseHeaders, requestBase };
}
