/**
 * Whether a request path (no query) is the backend API's: `/v1` or `/v1/…`
 * (exact and case-sensitive, SPEC §5). A path test rather than an Express
 * mount path, which would rewrite `req.url` on the way in and out.
 */
export function isBackendApiPath(path: string): boolean {
  return path.startsWith('/v1') && (path.length === 3 || path.charCodeAt(3) === 0x2f);
}

/**
 * The bounded `endpoint` label of gateway_backend_api_requests_total (SPEC §10):
 * the seed's endpoint shape, never a topic, namespace, cid or user id.
 */
export function endpointLabel(method: string, url: string): string {
  // Segments read in place (this runs on every request): '/v1/<kind>/<cid>/<sub>/…'
  const end = url.indexOf('?');
  const path = end < 0 ? url : url.slice(0, end);
  if (!path.startsWith('/v1/')) return 'unknown';
  const kind = segmentAt(path, 4);
  if (kind === 'publish') return 'publish';
  if (kind === 'lattice') return 'lattice_update';
  if (kind === 'user') return userLabel(method, path);
  // SPEC §15.2 queries.
  if (kind === 'topic') return method === 'GET' ? 'topic_query' : 'unknown';
  if (kind === 'info' && path.length === 8) return method === 'GET' ? 'info_query' : 'unknown';
  if (kind === 'batch' && path.length === 9) return 'batch';
  if (kind !== 'connection') return 'unknown';
  const cidEnd = path.indexOf('/', 15);
  // SPEC §12.6: DELETE /v1/connection/<cid> ends the connection.
  if (cidEnd < 0)
    return method === 'DELETE' ? 'connection_disconnect' : method === 'GET' ? 'connection_query' : 'unknown';
  const sub = segmentAt(path, cidEnd + 1);
  const action = method === 'DELETE' ? 'unsubscribe' : 'subscribe';
  if (sub === 'subscriptions') return `topic_${action}`;
  if (sub === 'lattices') return `lattice_${action}`;
  if (sub === 'users') return `users_${action}`;
  return 'unknown';
}

function userLabel(method: string, path: string): string {
  if (!path.endsWith('/connections')) return 'user_users';
  return method === 'DELETE' ? 'user_disconnect' : method === 'GET' ? 'user_connections_query' : 'user_users';
}

/** The path segment starting at `from`, up to the next `/` or the end. */
function segmentAt(path: string, from: number): string {
  const end = path.indexOf('/', from);
  return end < 0 ? path.slice(from) : path.slice(from, end);
}
