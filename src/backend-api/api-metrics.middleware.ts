import { Injectable, NestMiddleware } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { GatewayMetrics } from '../metrics/gateway-metrics';
import { endpointLabel } from './endpoint-label';

/** Counts every /v1 answer by endpoint shape and status, once the response is finished. */
@Injectable()
export class ApiMetricsMiddleware implements NestMiddleware {
  constructor(private readonly metrics: GatewayMetrics) {}

  use(req: Request, res: Response, next: NextFunction): void {
    const endpoint = endpointLabel(req.method, req.originalUrl);
    res.once('finish', () => this.metrics.backendApiRequests.labels(endpoint, String(res.statusCode)).inc());
    next();
  }
}
