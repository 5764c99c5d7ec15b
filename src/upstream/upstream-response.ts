import type { IncomingHttpHeaders } from 'node:http';

/**
 * What one upstream HTTP exchange produced. Transport outcomes are values, not
 * exceptions (STYLE B8); call-reply.ts and auth-response.ts map them to frames.
 */
export type UpstreamResponse =
  | {
      readonly kind: 'response';
      readonly status: number;
      readonly contentType: string | undefined;
      readonly body: Buffer;
      /** The answer's headers (SPEC §15.1 reads `Gateway-Subscribe` from the authorization answer). */
      readonly headers?: IncomingHttpHeaders;
    }
  | { readonly kind: 'timeout' }
  | { readonly kind: 'connection_error'; readonly reason: string }
  | { readonly kind: 'too_large' }
  | { readonly kind: 'queue_full' };

const JSON_CONTENT_TYPE = /^application\/json\s*(;\s*charset\s*=\s*"?utf-8"?\s*)?$/i;

/** `application/json`, with a charset only if it is utf-8 (SPEC §3). */
export function isJsonContentType(contentType: string | undefined): boolean {
  return contentType !== undefined && JSON_CONTENT_TYPE.test(contentType.trim());
}

/** Parse JSON text; undefined plus the parser message when it is invalid. */
export function tryParseJson(text: string): { ok: true; value: unknown } | { ok: false; message: string } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (err) {
    return { ok: false, message: (err as Error).message };
  }
}

/** The JSON text of an error response body when it is JSON and parses, else `null` (SPEC §3, §4.3). */
export function errorBodyJson(response: { contentType: string | undefined; body: Buffer }): string {
  if (!isJsonContentType(response.contentType)) return 'null';
  const text = response.body.toString('utf8');
  return tryParseJson(text).ok ? text : 'null';
}

/**
 * The outcome as a bounded label, one form for metrics and logs alike (issue 20):
 * `ok` (200), `http_<status>`, or the transport kind (`timeout`, `connection_error`,
 * `too_large`, `queue_full`).
 */
export function outcomeLabel(response: UpstreamResponse): string {
  if (response.kind !== 'response') return response.kind;
  return response.status === 200 ? 'ok' : 'http_' + response.status;
}

/**
 * Why an exchange failed, for logs (never the body): `status 401`, `timeout`,
 * `refused`, `dns`, `reset`, `tls`, `too_large`, `queue_full`, or
 * `connection_error` for any other transport error.
 */
export function failureCause(response: UpstreamResponse): string {
  if (response.kind === 'response') return `status ${response.status}`;
  if (response.kind !== 'connection_error') return response.kind;
  const reason = response.reason;
  if (reason.includes('ECONNREFUSED')) return 'refused';
  if (reason.includes('ENOTFOUND') || reason.includes('EAI_AGAIN')) return 'dns';
  if (reason.includes('ECONNRESET') || reason.includes('socket hang up')) return 'reset';
  if (/certificate|SSL|TLS/i.test(reason)) return 'tls';
  return 'connection_error';
}
