/**
 * The /v1 route templates (Express 5 syntax, relative to `/v1/`), written once:
 * the controllers' decorators and the batch router both read them (SPEC §5).
 */
export const ROUTES = {
  topicSubscription: 'connection/:cid/subscriptions/*topic',
  publish: 'publish/*topic',
  latticeSubscription: 'connection/:cid/lattices/*namespace',
  latticeUpdate: 'lattice/*namespace',
  usersSubscription: 'connection/:cid/users',
  userUsers: 'user/*uid/users',
  connection: 'connection/:cid',
  userConnections: 'user/*uid/connections',
  topic: 'topic/*topic',
  info: 'info',
  batch: 'batch',
} as const;

/** Path parameters by name, percent-decoded; a `*wildcard` is its segments joined by `/`. */
export type RouteParams = Readonly<Record<string, string>>;

/** Matches a `/v1/...` path (no query): its params, `null` when the route does not match, `undefined` when a param cannot be decoded. */
export type RouteMatcher = (path: string) => RouteParams | null | undefined;

const PART = /:(\w+)|\*(\w+)|[^:*]+/g;

/**
 * Compile a template of ROUTES into a matcher that agrees with Express 5 routing
 * as the gateway configures it (case-sensitive, strict): `:name` is one
 * non-empty segment, `*name` one or more; each segment is percent-decoded like
 * Express does (a broken escape is a 404 there too).
 */
export function compileRoute(template: string): RouteMatcher {
  const names: Array<{ name: string; isWildcard: boolean }> = [];
  let source = '^/v1/';
  for (const [part, param, wildcard] of template.matchAll(PART)) {
    if (param !== undefined || wildcard !== undefined) {
      names.push({ name: param ?? wildcard, isWildcard: wildcard !== undefined });
      source += wildcard !== undefined ? '(.+?)' : '([^/]+?)';
    } else {
      source += part.replace(/[.+?^${}()|[\]\\/]/g, '\\$&');
    }
  }
  const regex = new RegExp(source + '$');
  return (path) => {
    const match = regex.exec(path);
    if (match === null) return null;
    const params: Record<string, string> = {};
    try {
      names.forEach(({ name, isWildcard }, i) => {
        params[name] = isWildcard ? match[i + 1].split('/').map(decodeSegment).join('/') : decodeSegment(match[i + 1]);
      });
    } catch {
      return undefined;
    }
    return params;
  };
}

function decodeSegment(segment: string): string {
  return segment.includes('%') ? decodeURIComponent(segment) : segment;
}
