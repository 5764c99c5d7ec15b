import { Destination, Handler } from '../config/gateway-config';
import { methodToPath } from '../protocol/identifiers';

/** Where one method goes: the destination, the URL to POST to, and that URL's path. */
export interface Route {
  readonly destination: Destination;
  readonly url: string;
  /** Path and nothing else (`/api/chat/send`), for the HTTP request line. */
  readonly path: string;
}

interface Target {
  readonly destination: Destination;
  /** destination url + handler path prefix, computed once. */
  readonly urlPrefix: string;
  /** destination url's path + handler path prefix, computed once. */
  readonly pathPrefix: string;
}

/** Routes remembered per table: method names come from clients, so the memo is bounded. */
const MAX_REMEMBERED_ROUTES = 1024;

/**
 * One handler's message_handlers, precompiled (SPEC §1): exact name first, then
 * the longest `prefix.*` glob, then `*`. Built once at start; `route` is a lookup,
 * and the first 1024 distinct methods' routes are remembered whole.
 */
export class RouteTable {
  private readonly remembered = new Map<string, Route>();
  private readonly exact = new Map<string, Target>();
  /** Longest prefix first; each prefix includes its trailing dot. */
  private readonly globs: Array<{ prefix: string; target: Target }> = [];
  private readonly fallback: Target;

  constructor(handler: Handler, destinations: ReadonlyMap<string, Destination>) {
    let fallback: Target | undefined;
    for (const [pattern, route] of handler.messageHandlers) {
      const destination = destinations.get(route.destination);
      if (!destination) throw new Error(`handler ${handler.name}: unknown destination ${route.destination}`);
      const basePath = new URL(destination.url).pathname.replace(/\/+$/, '');
      const target = {
        destination,
        urlPrefix: destination.url + route.pathPrefix,
        pathPrefix: basePath + route.pathPrefix,
      };
      if (pattern === '*') fallback = target;
      else if (pattern.endsWith('.*')) this.globs.push({ prefix: pattern.slice(0, -1), target });
      else this.exact.set(pattern, target);
    }
    if (!fallback) throw new Error(`handler ${handler.name}: no "*" pattern`);
    this.fallback = fallback;
    this.globs.sort((a, b) => b.prefix.length - a.prefix.length);
  }

  /** The route of `method` (a dotted name; `gateway.*` names are routed like any other). */
  route(method: string): Route {
    let route = this.remembered.get(method);
    if (route !== undefined) return route;
    const target = this.targetOf(method);
    const methodPath = methodToPath(method);
    route = {
      destination: target.destination,
      url: target.urlPrefix + methodPath,
      path: target.pathPrefix + methodPath,
    };
    if (this.remembered.size < MAX_REMEMBERED_ROUTES) this.remembered.set(method, route);
    return route;
  }

  private targetOf(method: string): Target {
    const exact = this.exact.get(method);
    if (exact) return exact;
    for (const glob of this.globs) {
      // `prefix.*` matches names that start with `prefix.` and are longer.
      if (method.length > glob.prefix.length && method.startsWith(glob.prefix)) return glob.target;
    }
    return this.fallback;
  }
}

/** The method names the gateway itself calls (SPEC §1: routed like methods). */
export const AUTHORIZE_METHOD = 'gateway.authorize_connection';
export const SESSION_INACTIVE_METHOD = 'gateway.session_inactive';
/** SPEC §14: the refresh of an authorization whose lifetime nears its end. */
export const REFRESH_METHOD = 'gateway.refresh_connection';
