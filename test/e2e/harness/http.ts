/** Tiny fetch wrappers for the backend API. */

export interface ApiResponse {
  readonly status: number;
  readonly text: string;
  readonly headers: Headers;
  json(): unknown;
}

/** Send `method path` to `baseUrl`; a non-string body is JSON-encoded with Content-Type application/json. */
export async function api(baseUrl: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<ApiResponse> {
  const init: RequestInit = { method, headers: { ...headers } };
  if (body !== undefined) {
    init.body = typeof body === 'string' || body instanceof Uint8Array ? (body as string) : JSON.stringify(body);
    (init.headers as Record<string, string>)['Content-Type'] ??= 'application/json';
  }
  const res = await fetch(baseUrl + path, init);
  const text = await res.text();
  return { status: res.status, text, headers: res.headers, json: () => JSON.parse(text) };
}
