import * as http from 'node:http';

const agent = new http.Agent({ keepAlive: true, maxSockets: 32 });

/** Close the pooled sockets (end of a scenario). */
export function closeApiSockets(): void {
  agent.destroy();
}

/** What a backend API request came to: a status and its JSON `error` code, or the transport error. */
export interface ApiReply {
  readonly status: number;
  /** The `error` of a JSON error body ("cluster_unavailable", ...), else null. */
  readonly error: string | null;
  /** A transport failure (refused, reset, timeout): no status. */
  readonly failure: string | null;
}

/** One `/v1` request; never rejects: a refused, reset or timed-out request is a `failure`. */
export function apiReply(baseUrl: string, method: string, path: string, body: unknown, ms: number): Promise<ApiReply> {
  const url = new URL(baseUrl);
  const text = body === undefined ? undefined : JSON.stringify(body);
  const headers: Record<string, string> =
    text === undefined ? {} : { 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(text)) };
  return new Promise<ApiReply>((resolve) => {
    const req = http.request(
      { host: url.hostname, port: url.port, method, path, headers, agent, timeout: ms },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          let error: string | null = null;
          try {
            error = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { error?: string }).error ?? null;
          } catch {
            // no JSON body (204)
          }
          resolve({ status: res.statusCode ?? 0, error, failure: null });
        });
        res.on('error', (err) => resolve({ status: 0, error: null, failure: err.message }));
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer within ${ms} ms`)));
    req.on('error', (err) => resolve({ status: 0, error: null, failure: err.message }));
    req.end(text);
  });
}
