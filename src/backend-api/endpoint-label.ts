/**
 * The bounded `endpoint` label of gateway_backend_api_requests_total (SPEC §10):
 * the seed's endpoint shape, never a topic, namespace, cid or user id.
 */
export function endpointLabel(method: string, path: string): string {
  const parts = path.split('?')[0].split('/');
  // ['', 'v1', kind, ...]
  if (parts[1] !== 'v1') return 'unknown';
  const kind = parts[2];
  if (kind === 'publish') return 'publish';
  if (kind === 'lattice') return 'lattice_update';
  if (kind === 'user') return 'user_users';
  if (kind === 'batch' && parts.length === 3) return 'batch';
  if (kind !== 'connection') return 'unknown';
  const sub = parts[4];
  const action = method === 'DELETE' ? 'unsubscribe' : 'subscribe';
  if (sub === 'subscriptions') return `topic_${action}`;
  if (sub === 'lattices') return `lattice_${action}`;
  if (sub === 'users') return `users_${action}`;
  return 'unknown';
}
