import { isPlainObject } from '../protocol/frame-codec';
import { MAX_FRAME_DEPTH, isNestedDeeperThan } from '../protocol/json-depth';
import { isValidUserId } from '../protocol/identifiers';
import { Identity } from '../protocol/identity';
import { parseSubscribeHeader } from './subscribe-header';
import { UpstreamResponse, errorBodyJson, isJsonContentType, tryParseJson } from '../upstream/upstream-response';
import { contentTypeProblem, userIdProblem } from './auth-failure-reason';

export { Identity };

/** SPEC §3: largest compact JSON of an authorization response object. */
export const MAX_AUTH_JSON_BYTES = 8 * 1024;
/** SPEC §3: statuses passed to the client as they are; all others become 500. */
const PASSED_STATUSES = new Set([400, 401, 403, 404, 410, 500, 503]);

/** A failed authorization: the fatal_error frame's status and data (JSON text), plus a reason for logs. */
export interface AuthFailure {
  readonly status: number;
  readonly dataJson: string;
  readonly reason: string;
}

/** `subscribe`: SPEC §15.1, the topics of the answer's `Gateway-Subscribe` header, when it names any. */
export type AuthOutcome =
  | { readonly ok: true; readonly identity: Identity; readonly subscribe?: readonly string[] }
  | ({ readonly ok: false } & AuthFailure);

/** SPEC §3 table: map the upstream's answer to an identity or a failure. Never throws. */
export function authOutcome(response: UpstreamResponse): AuthOutcome {
  switch (response.kind) {
    case 'queue_full':
      return fail(503, 'null', 'destination queue full');
    case 'timeout':
    case 'connection_error':
    case 'too_large':
      return fail(500, 'null', response.kind);
    case 'response':
      break;
  }
  const { status, contentType, body } = response;
  if (status !== 200) {
    const data = PASSED_STATUSES.has(status) ? errorBodyJson(response) : 'null';
    return fail(PASSED_STATUSES.has(status) ? status : 500, data, `status ${status}`);
  }
  if (!isJsonContentType(contentType)) return fail(500, 'null', contentTypeProblem(contentType));
  const parsed = tryParseJson(body.toString('utf8'));
  if (!parsed.ok) return fail(500, 'null', 'body is not JSON');
  if (!isPlainObject(parsed.value)) return fail(500, 'null', 'body is not a JSON object');
  if (!isValidUserId(parsed.value.user_id)) return fail(500, 'null', userIdProblem(parsed.value.user_id));
  // SPEC §3: checked before anything recurses into it (JSON.stringify would throw a RangeError).
  if (isNestedDeeperThan(parsed.value, MAX_FRAME_DEPTH))
    return fail(500, 'null', `response nested deeper than ${MAX_FRAME_DEPTH} levels`);
  const json = JSON.stringify(parsed.value);
  if (Buffer.byteLength(json) > MAX_AUTH_JSON_BYTES)
    return fail(500, 'null', `response over ${MAX_AUTH_JSON_BYTES} bytes`);
  const subscribe = parseSubscribeHeader(response.headers?.['gateway-subscribe'] as string | undefined);
  if (!subscribe.ok) return fail(500, 'null', subscribe.reason);
  const identity = identityOf(parsed.value.user_id, json);
  return subscribe.topics.length === 0 ? { ok: true, identity } : { ok: true, identity, subscribe: subscribe.topics };
}

/** Build the identity from the user id and the compact JSON of the whole response. */
export function identityOf(userId: string, json: string): Identity {
  return new Identity(userId, json);
}

function fail(status: number, dataJson: string, reason: string): AuthOutcome {
  return { ok: false, status, dataJson, reason };
}
