import { isIP } from 'node:net';

/** What the loader needs to judge the internal listener's exposure (raw env strings). */
export interface ExposureInput {
  readonly host: string;
  readonly hasToken: boolean;
  readonly isInsecureAccepted: boolean;
}

/** A refusal (a configuration problem) or a warning to log at every start; both null when safe. */
export interface Exposure {
  readonly problem: string | null;
  readonly warning: string | null;
}

/**
 * Issue 20: `/v1` publishes to and subscribes anyone, so an internal listener
 * reachable beyond this host must carry BACKEND_API_TOKEN. Without one the
 * gateway refuses to start, unless BACKEND_API_INSECURE=true says the operator
 * guards the port otherwise (then a warning at every start). Pure.
 */
export function backendApiExposure(input: ExposureInput): Exposure {
  if (input.hasToken || isLoopbackHost(input.host)) return { problem: null, warning: null };
  const where = JSON.stringify(input.host);
  if (input.isInsecureAccepted) {
    return {
      problem: null,
      warning: `BACKEND_API_INSECURE: the backend API (/v1) listens on ${where} without BACKEND_API_TOKEN: anyone who reaches BACKEND_API_PORT can publish to and subscribe any connection`,
    };
  }
  return {
    problem:
      `BACKEND_API_TOKEN: is required because BACKEND_API_HOST ${where} is not a loopback address ` +
      '(set BACKEND_API_TOKEN to a secret, or BACKEND_API_HOST=127.0.0.1, or BACKEND_API_INSECURE=true to accept an open /v1)',
    warning: null,
  };
}

/** `localhost`, `127.0.0.0/8`, `::1` (and its IPv4-mapped form): reachable from this host only. */
export function isLoopbackHost(host: string): boolean {
  const lower = host.toLowerCase();
  if (lower === 'localhost' || lower === '::1') return true;
  if (isIP(lower) === 4) return lower.startsWith('127.');
  return lower.startsWith('::ffff:127.') && isIP(lower) === 6;
}
