import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { Response } from 'express';
import { ClusterUnavailableError } from '../cluster/cluster-unavailable.error';
import { BackendApiError, writeApiError } from './backend-api.error';
import { canAnswer } from './client-fault';

/**
 * The internal listener's only error writer (SPEC §5): 404/403/401 with an
 * empty body, 400 with `{"error","message"}`, 413 with `Connection: close`.
 * Nest's default `{statusCode, message, error}` never reaches a client.
 */
@Catch()
export class BackendApiFilter implements ExceptionFilter {
  private readonly logger = new Logger(BackendApiFilter.name);

  catch(exception: unknown, host: ArgumentsHost): void {
    const res = host.switchToHttp().getResponse<Response>();
    // A client that left (or broke its request) gets nothing, and nothing is counted as sent (SPEC §5).
    if (!canAnswer(res)) return;
    if (exception instanceof BackendApiError) return writeApiError(res, exception);
    // SPEC §11: the node(s) the call needs cannot be reached now; the caller may retry.
    if (exception instanceof ClusterUnavailableError)
      return writeApiError(res, new BackendApiError(503, exception.code, exception.message));
    if (exception instanceof HttpException) {
      const status = exception.getStatus();
      // Routes that do not exist, and methods a route does not support: 404, never 405.
      if (status === 404 || status === 405) return void res.status(404).set('Content-Length', '0').end();
      // Express could not percent-decode a path parameter (`/v1/publish/a%zz`): a path part
      // outside its character set, so 404 (our own 400s are BackendApiErrors). The token was
      // checked before routing (BackendApiEntryMiddleware).
      if (status === 400) return writeApiError(res, new BackendApiError(404));
      // Anything else (e.g. terminus' 503 on /health/ready) keeps its own body: no /v1 route throws one.
      return void res.status(status).json(exception.getResponse());
    }
    this.logger.error({
      msg: 'backend API handler failed',
      error: exception instanceof Error ? exception.name : 'unknown',
    });
    res.status(500).json({ error: 'internal_error', message: 'unexpected server error' });
  }
}
