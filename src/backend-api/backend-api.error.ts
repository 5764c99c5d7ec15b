import type { Response } from 'express';

/** A backend API refusal with its SPEC §5 status; the filter writes the body. */
export class BackendApiError extends Error {
  constructor(
    readonly status: 400 | 401 | 403 | 404 | 413 | 503,
    /** For 400 and 503: the `error` code of the JSON body. */
    readonly code?: string,
    /** For 400 and 503: what was wrong and where. */
    readonly detail?: string,
  ) {
    super(detail ?? code ?? String(status));
  }
}

export const notFound = (): BackendApiError => new BackendApiError(404);
export const badRequest = (code: string, detail: string): BackendApiError => new BackendApiError(400, code, detail);

/** SPEC §5 bodies: 404/403/401 empty, 400 and 503 (§11) `{"error","message"}`, 413 with `Connection: close`. */
export function writeApiError(res: Response, error: BackendApiError): void {
  if (error.status === 400 || error.status === 503)
    return void res.status(error.status).json({ error: error.code, message: error.detail });
  if (error.status === 413) res.set('Connection', 'close');
  if (error.status === 401) res.set('WWW-Authenticate', 'Bearer');
  res.status(error.status).set('Content-Length', '0').end();
}
