import { Injectable, NestMiddleware } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { notFound } from './backend-api.error';

/**
 * SPEC §5: an empty path part is a 404. Express routes are not strict, so
 * without this `/v1/connection/<cid>/users/` (trailing slash) would reach
 * endpoint 7; topics and namespaces check their own parts, but the fixed
 * parts of a route do not.
 */
@Injectable()
export class PathShapeMiddleware implements NestMiddleware {
  use(req: Request, _res: Response, next: NextFunction): void {
    const path = req.originalUrl.split('?')[0];
    if (path.slice(1).split('/').includes('')) throw notFound();
    next();
  }
}
