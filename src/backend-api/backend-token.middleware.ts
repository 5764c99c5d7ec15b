import { Injectable, NestMiddleware } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { timingSafeEqual } from 'node:crypto';
import { GatewayConfig } from '../config/gateway-config';

const BEARER = /^bearer\s+(.+)$/i;

/**
 * SPEC §1 [ext]: with BACKEND_API_TOKEN set, every /v1 request needs
 * `Authorization: Bearer <token>` (constant-time compare). A middleware, not a
 * guard, so that 401 comes before 404, 400 and 413 even on unknown paths.
 */
@Injectable()
export class BackendTokenMiddleware implements NestMiddleware {
  private readonly expected: Buffer | null;

  constructor(config: GatewayConfig) {
    this.expected = config.backendApiToken === null ? null : Buffer.from(config.backendApiToken);
  }

  use(req: Request, res: Response, next: NextFunction): void {
    if (this.allows(req)) return next();
    res.status(401).set({ 'WWW-Authenticate': 'Bearer', 'Content-Length': '0' }).end();
  }

  /** No token configured, or the request carries it. */
  allows(req: Request): boolean {
    return this.expected === null || this.isAuthorized(req.headers.authorization);
  }

  private isAuthorized(header: string | undefined): boolean {
    const match = header === undefined ? null : BEARER.exec(header);
    if (match === null) return false;
    const given = Buffer.from(match[1].trim());
    return given.length === this.expected!.length && timingSafeEqual(given, this.expected!);
  }
}
