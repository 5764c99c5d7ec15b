import { RecordedRequest } from './fake-upstream';

/** The identity header of SPEC §3, as the upstream sees it on every request after the authorization. */

const SCHEME = 'Gateway+json ';

/** `Gateway+json <standard padded base64 of json>`: pass the exact JSON text (compact for an auth response). */
export function identityHeader(json: string): string {
  return SCHEME + Buffer.from(json, 'utf8').toString('base64');
}

/** The user a request speaks for, read from its identity header. */
export function userOf(req: RecordedRequest): string {
  const value = String(req.headers.authorization ?? '').slice(SCHEME.length);
  return (JSON.parse(Buffer.from(value, 'base64').toString('utf8')) as { user_id: string }).user_id;
}
