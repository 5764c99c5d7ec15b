import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { Request, Response } from 'express';
import { BackendApiError } from './backend-api.error';
import { BackendTokenMiddleware } from './backend-token.middleware';

/**
 * The internal listener's only error writer (SPEC §5): 404/403/401 with an
 * empty body, 400 with `{"error","message"}`, 413 with `Connection: close`.
 * Nest's default `{statusCode, message, error}` never reaches a client.
 */
@Catch()
export class BackendApiFilter implements ExceptionFilter {
  private readonly logger = new Logger(BackendApiFilter.name);

  constructor(private readonly token: BackendTokenMiddleware) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const res = host.switchToHttp().getResponse<Response>();
    if (res.headersSent) return;
    if (exception instanceof BackendApiError) return writeApiError(res, exception);
    if (exception instanceof HttpException) {
      const status = exception.getStatus();
      // Routes that do not exist, and methods a route does not support: 404, never 405.
      if (status === 404 || status === 405) return void res.status(404).set('Content-Length', '0').end();
      // Express could not percent-decode a path parameter (`/v1/publish/a%zz`): a path part
      // outside its character set, so 404 (our own 400s are BackendApiErrors). Express fails
      // while matching the token middleware's route, before it ran: check the token here (401 first).
      if (status === 400) return writeApiError(res, new BackendApiError(this.token.allows(host.switchToHttp().getRequest<Request>()) ? 404 : 401));
      // Anything else (e.g. terminus' 503 on /health/ready) keeps its own body: no /v1 route throws one.
      return void res.status(status).json(exception.getResponse());
    }
    this.logger.error({ msg: 'backend API handler failed', error: exception instanceof Error ? exception.name : 'unknown' });
    res.status(500).json({ error: 'internal_error', message: 'unexpected server error' });
  }
}

function writeApiError(res: Response, error: BackendApiError): void {
  if (error.status === 400) return void res.status(400).json({ error: error.code, message: error.detail });
  if (error.status === 413) res.set('Connection', 'close');
  if (error.status === 401) res.set('WWW-Authenticate', 'Bearer');
  res.status(error.status).set('Content-Length', '0').end();
}
