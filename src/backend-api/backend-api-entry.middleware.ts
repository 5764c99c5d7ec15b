import { Injectable, Logger, NestMiddleware } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { timingSafeEqual } from 'node:crypto';
import { GatewayConfig } from '../config/gateway-config';
import { GatewayMetrics } from '../metrics/gateway-metrics';
import { GatewayTracer } from '../tracing/gateway-tracer';
import { BackendApiError, writeApiError } from './backend-api.error';
import { forgetInFlight, trackInFlight } from './client-fault';
import { endpointLabel } from './endpoint-label';
import { requestIdOf } from './request-id';

const BEARER = /^bearer\s+(.+)$/i;
/** When a /v1 request started (performance.now()), kept on its response at LOG_LEVEL=debug only. */
const STARTED_AT = Symbol('startedAt');
type TimedResponse = Response & { [STARTED_AT]?: number };
const UNAUTHORIZED = new BackendApiError(401);
const NOT_FOUND = new BackendApiError(404);

/**
 * Where every /v1 request enters, mounted on Express ahead of Nest's router
 * (startGateway), so it runs even when a route cannot be matched or its path
 * cannot be decoded (`%zz`). In order:
 * 1. gives the request its id (the caller's REQUEST_ID_HEADER, or a new one),
 *    echoed in the response; counts the answer, once finished, by endpoint
 *    shape and status (SPEC §10), and at LOG_LEVEL=debug logs one line for it;
 *    keeps it as its socket's request in progress (answerInFlight);
 * 2. SPEC §1 [ext]: with BACKEND_API_TOKEN set, `Authorization: Bearer <token>`
 *    is required (constant-time compare): 401 before 404, 400 and 413;
 *    only a request that passes gets a tracing span (issue 35);
 * 3. SPEC §5: an empty path part is a 404 (Express routes are not strict, so
 *    `/v1/connection/<cid>/users/` would otherwise reach endpoint 7).
 * One function, not three Nest middlewares: each of those is a router layer
 * matched on every request.
 */
@Injectable()
export class BackendApiEntryMiddleware implements NestMiddleware {
  private readonly expected: Buffer | null;
  /** Counter children by `<endpoint> <status>`, bound on first use (a bounded set). */
  private readonly counters = new Map<string, { inc(): void }>();
  /** One 'finish' listener for every response (no closure per request): counts it, ends its in-flight mark. */
  private readonly onFinish: (this: Response) => void;

  private readonly requestIdHeader: string;
  /** LOG_LEVEL=debug, read once: off, a request costs no logging work (issue 20). */
  private readonly isDebug: boolean;
  private readonly logger = new Logger('BackendApi');

  constructor(
    config: GatewayConfig,
    private readonly metrics: GatewayMetrics,
    private readonly tracer: GatewayTracer,
  ) {
    this.expected = config.backendApiToken === null ? null : Buffer.from(config.backendApiToken);
    this.requestIdHeader = config.backendApiRequestIdHeader.toLowerCase();
    this.isDebug = config.log.level === 'debug';
    const finished = (res: TimedResponse): void => {
      const endpoint = endpointLabel(res.req.method, (res.req as Request).path);
      this.count(endpoint, res.statusCode);
      if (res[STARTED_AT] !== undefined) this.logRequest(res, endpoint, res[STARTED_AT]);
    };
    this.onFinish = function (this: Response): void {
      // Node detaches the socket from the response before its own 'finish' listener
      // returns (res.socket is null here): the request still has it.
      forgetInFlight(this.req.socket, this);
      finished(this);
    };
  }

  use(req: Request, res: Response, next: NextFunction): void {
    if (this.isDebug) (res as TimedResponse)[STARTED_AT] = performance.now();
    res.setHeader(this.requestIdHeader, requestIdOf(req.headers[this.requestIdHeader]));
    trackInFlight(req.socket, res);
    res.on('finish', this.onFinish);
    if (!this.allows(req.headers.authorization)) return writeApiError(res, UNAUTHORIZED);
    // After the token check: a refused caller gets no span, so it cannot write into a trace of its choosing.
    if (this.tracer.isEnabled)
      this.tracer.traceApiRequest(req.method, endpointLabel(req.method, req.path), req.headers, res);
    const path = req.path;
    if (path.includes('//') || path.endsWith('/')) return writeApiError(res, NOT_FOUND);
    next();
  }

  private count(endpoint: string, status: number): void {
    const key = endpoint + ' ' + status;
    let counter = this.counters.get(key);
    if (counter === undefined)
      this.counters.set(key, (counter = this.metrics.backendApiRequests.labels(endpoint, String(status))));
    counter.inc();
  }

  /** One debug line per /v1 request: method, route, status, duration, request id; never a body or the token (SPEC §10). */
  private logRequest(res: Response, route: string, startedAt: number): void {
    const durationMs = Math.round((performance.now() - startedAt) * 10) / 10;
    const requestId = res.getHeader(this.requestIdHeader);
    this.logger.debug({
      msg: 'backend api request',
      method: res.req.method,
      route,
      path: (res.req as Request).path,
      status: res.statusCode,
      duration_ms: durationMs,
      request_id: requestId,
    });
  }

  /** No token configured, or the header carries it. */
  private allows(header: string | undefined): boolean {
    if (this.expected === null) return true;
    const match = header === undefined ? null : BEARER.exec(header);
    if (match === null) return false;
    const given = Buffer.from(match[1].trim());
    return given.length === this.expected.length && timingSafeEqual(given, this.expected);
  }
}
