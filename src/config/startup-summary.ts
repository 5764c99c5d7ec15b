import { GatewayConfig } from './gateway-config';

/** Words that start a placeholder someone forgot to replace (`change-me-to-a-long-random-secret`). */
const PLACEHOLDER_START = /^(change|replace)[-_]?me/i;
/** Well-known placeholder tokens (compared without letter case): as good as no token. */
const PLACEHOLDER_TOKENS = new Set(['secret', 'token', 'password', 'test', 'example']);
/** A bearer token shorter than this is guessable. */
export const MIN_TOKEN_CHARS = 16;
const ADVICE = 'anyone who can reach /v1 may guess it; use a long random secret (e.g. `openssl rand -hex 32`)';

/** A start-up warning for a weak BACKEND_API_TOKEN, or null. Never repeats the token. */
export function backendTokenWarning(token: string | undefined): string | null {
  if (token === undefined) return null;
  if (PLACEHOLDER_TOKENS.has(token.toLowerCase()) || PLACEHOLDER_START.test(token))
    return `BACKEND_API_TOKEN is a well-known placeholder: ${ADVICE}`;
  if (token.length < MIN_TOKEN_CHARS)
    return `BACKEND_API_TOKEN is shorter than ${MIN_TOKEN_CHARS} characters (${token.length}): ${ADVICE}`;
  return null;
}

/** Per WebSocket path, the backend URLs its requests go to (the `gateway started` line). */
export function handlerSummary(config: GatewayConfig): Array<{ path: string; upstream: string[] }> {
  return config.handlers.map((handler) => {
    const urls = new Set<string>();
    for (const target of handler.messageHandlers.values()) {
      const destination = config.destinations.get(target.destination);
      if (destination !== undefined) urls.add(destination.url + target.pathPrefix);
    }
    return { path: handler.path, upstream: [...urls] };
  });
}
