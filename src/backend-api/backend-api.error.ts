/** A backend API refusal with its SPEC §5 status; the filter writes the body. */
export class BackendApiError extends Error {
  constructor(
    readonly status: 400 | 401 | 403 | 404 | 413,
    /** For 400: the `error` code of the JSON body. */
    readonly code?: string,
    /** For 400: what was wrong and where. */
    readonly detail?: string,
  ) {
    super(detail ?? code ?? String(status));
  }
}

export const notFound = (): BackendApiError => new BackendApiError(404);
export const badRequest = (code: string, detail: string): BackendApiError => new BackendApiError(400, code, detail);
