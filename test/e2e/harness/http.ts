/** Tiny fetch wrappers for the backend API. */

export interface ApiResponse {
  readonly status: number;
  readonly text: string;
  readonly headers: Headers;
  json(): unknown;
}

/** Send `method path` to `baseUrl`; a non-string body is JSON-encoded with Content-Type application/json. */
export async function api(
  baseUrl: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<ApiResponse> {
  const init: RequestInit = { method, headers: { ...headers } };
  if (body !== undefined) {
    init.body = typeof body === 'string' || body instanceof Uint8Array ? (body as string) : JSON.stringify(body);
    (init.headers as Record<string, string>)['Content-Type'] ??= 'application/json';
  }
  const res = await fetch(baseUrl + path, init);
  const text = await res.text();
  return { status: res.status, text, headers: res.headers, json: () => JSON.parse(text) };
}

/**
 * Re-send `GET url` until it answers `status`, within `ms`. A refused connection
 * fails at once: the listener is gone, so the status will never come.
 */
export async function untilStatus(url: string, status: number, ms = 2000): Promise<ApiResponse> {
  const deadline = Date.now() + ms;
  for (;;) {
    let res: Response;
    try {
      res = await fetch(url);
    } catch (err) {
      throw new Error(
        `GET ${url} failed while waiting for ${status}: ${(err as Error & { cause?: Error }).cause?.message ?? (err as Error).message}`,
      );
    }
    const text = await res.text();
    if (res.status === status) return { status: res.status, text, headers: res.headers, json: () => JSON.parse(text) };
    if (Date.now() > deadline)
      throw new Error(`timed out after ${ms} ms waiting for GET ${url} to answer ${status} (last ${res.status})`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** A request whose body is streamed, so fetch sends `Transfer-Encoding: chunked` and no Content-Length. */
export function chunked(
  baseUrl: string,
  method: string,
  path: string,
  chunks: string[],
  headers: Record<string, string> = {},
): Promise<Response> {
  const encoder = new TextEncoder();
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(encoder.encode(chunk));
      controller.close();
    },
  });
  return fetch(baseUrl + path, {
    method,
    body,
    headers: { 'Content-Type': 'application/json', ...headers },
    duplex: 'half',
  } as RequestInit);
}
