import type { IncomingHttpHeaders } from 'node:http';
import { Handler } from '../config/gateway-config';
import { ResumeRequest, resumeRequestOf } from './resume-offer';

/** Subprotocols the gateway speaks, preferred first (SPEC §2). */
export const SUBPROTOCOL = 'v1.gateway-lattice+json';
export const LEGACY_SUBPROTOCOL = 'v1.swindon-lattice+json';

export interface HandshakeContext {
  readonly handlersByPath: ReadonlyMap<string, Handler>;
  /** ALLOWED_ORIGINS: exact origins, `*` = any; null = same origin as the Host header. */
  readonly allowedOrigins: ReadonlySet<string> | null;
  readonly connectionCount: number;
  readonly maxConnections: number;
  /** SPEC §12: resumable sessions are offered; when not, `gateway-resume` entries are ignored. */
  readonly isResumeOffered: boolean;
}

export type HandshakeDecision =
  | { readonly ok: true; readonly handler: Handler; readonly protocol: string; readonly resume: ResumeRequest }
  | { readonly ok: false; readonly status: 400 | 403 | 404 | 503; readonly text: string };

/**
 * SPEC §2: the checks before the 101, in order: path → 404, subprotocol → 400,
 * connection limit → 503, origin → 403. Pure; never throws.
 */
export function decideHandshake(
  url: string | undefined,
  headers: IncomingHttpHeaders,
  ctx: HandshakeContext,
): HandshakeDecision {
  const handler = ctx.handlersByPath.get(pathOf(url));
  if (handler === undefined) return { ok: false, status: 404, text: 'no WebSocket handler on this path' };
  const protocol = chooseSubprotocol(headers['sec-websocket-protocol']);
  if (protocol === null) {
    return {
      ok: false,
      status: 400,
      text: `Sec-WebSocket-Protocol must offer ${SUBPROTOCOL} (or legacy ${LEGACY_SUBPROTOCOL})`,
    };
  }
  if (ctx.connectionCount >= ctx.maxConnections) return { ok: false, status: 503, text: 'connection limit reached' };
  const origin = headers.origin;
  if (origin !== undefined && !isOriginAllowed(origin, headers.host, ctx.allowedOrigins)) {
    return { ok: false, status: 403, text: 'origin not allowed' };
  }
  const resume = ctx.isResumeOffered ? resumeRequestOf(headers['sec-websocket-protocol']) : NO_RESUME;
  return { ok: true, handler, protocol, resume };
}

const NO_RESUME: ResumeRequest = { kind: 'none' };

/**
 * SPEC §1 ALLOWED_ORIGINS: a listed origin, any with `*`, or, when unset, an
 * origin whose host and port are those of the `Host` header (a port left out
 * is the origin scheme's default). [fix] The default stops cross-site
 * WebSocket hijacking: a page elsewhere would connect with its visitor's cookies.
 */
export function isOriginAllowed(
  origin: string,
  host: string | undefined,
  allowed: ReadonlySet<string> | null,
): boolean {
  if (allowed !== null) return allowed.has(origin) || allowed.has('*');
  if (host === undefined) return false;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false; // "null" (sandboxed pages, file:) and anything unparsable
  }
  const defaultPort = url.protocol === 'https:' ? ':443' : url.protocol === 'http:' ? ':80' : null;
  const hostHeader = host.toLowerCase();
  const hostPort =
    defaultPort !== null && hostHeader.endsWith(defaultPort) ? hostHeader.slice(0, -defaultPort.length) : hostHeader;
  return url.host === hostPort;
}

/** The subprotocol to echo, or null when the offer lacks both of ours. */
export function chooseSubprotocol(header: string | undefined): string | null {
  if (header === undefined) return null;
  if (header === SUBPROTOCOL) return SUBPROTOCOL; // what nearly every client sends
  const offered = header.split(',').map((p) => p.trim());
  if (offered.includes(SUBPROTOCOL)) return SUBPROTOCOL;
  if (offered.includes(LEGACY_SUBPROTOCOL)) return LEGACY_SUBPROTOCOL;
  return null;
}

/** SPEC §2: a request that sends Cookie or Authorization more than once. */
export function hasDuplicateCredentialHeaders(rawHeaders: readonly string[]): boolean {
  let cookies = 0;
  let authorizations = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i];
    // Lower-cased only at the two lengths that can match: no new string per header of every upgrade.
    if (name.length === 6 && name.toLowerCase() === 'cookie') cookies++;
    else if (name.length === 13 && name.toLowerCase() === 'authorization') authorizations++;
  }
  return cookies > 1 || authorizations > 1;
}

/** The raw query string without `?`, not decoded; `""` when none (SPEC §3). */
export function queryStringOf(url: string | undefined): string {
  if (url === undefined) return '';
  const at = url.indexOf('?');
  return at < 0 ? '' : url.slice(at + 1);
}

function pathOf(url: string | undefined): string {
  if (url === undefined) return '/';
  const at = url.indexOf('?');
  return at < 0 ? url : url.slice(0, at);
}
