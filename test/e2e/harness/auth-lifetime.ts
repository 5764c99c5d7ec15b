import { RecordedRequest, Reply } from './fake-upstream';
import { identityHeader, userOf } from './identity';

/** What the §14 specs share: the upstream's authorization route with a lifetime, and refresh requests. */

export const AUTH_PATH = '/gateway/authorize_connection';
export const REFRESH_PATH = '/gateway/refresh_connection';
export const INACTIVE_PATH = '/gateway/session_inactive';

// The identity header's helpers live in harness/identity.ts; the §14 specs import them from here too.
export { identityHeader, userOf };

/** Matches a refresh request for `user`. */
export const refreshOf =
  (user: string) =>
  (r: RecordedRequest): boolean =>
    r.path === REFRESH_PATH && userOf(r) === user;

/** Matches a `session_inactive` notice (SPEC §8) for `user`. */
export const inactiveNoticeOf =
  (user: string) =>
  (r: RecordedRequest): boolean =>
    r.path === INACTIVE_PATH && userOf(r) === user;

/**
 * The authorization route of the §14 specs: `user=<id>` names the user and
 * `ttl=<text>` the `Gateway-Auth-TTL` header (none without it).
 */
export function authorize(req: RecordedRequest): Reply {
  const query = new URLSearchParams((req.body as [unknown, unknown, { url_querystring: string }])[2].url_querystring);
  const ttl = query.get('ttl');
  return { json: { user_id: query.get('user') ?? 'u1' }, headers: ttl === null ? {} : { 'Gateway-Auth-TTL': ttl } };
}
