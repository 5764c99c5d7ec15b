import { JsonObject, encodeError, encodeResult } from '../protocol/frames';
import { UpstreamResponse, errorBodyJson, isJsonContentType, tryParseJson } from './upstream-response';

/** Outcome label of a call for metrics and logs. */
export type CallOutcome = 'ok' | 'http_error' | 'data_error' | 'transport_error' | 'queue_full';

/**
 * SPEC §4.3: the frame text answering a call whose client meta was `meta`.
 * Every reply echoes the whole meta; error fields override same-named keys.
 */
export function callReply(meta: JsonObject, response: UpstreamResponse): { frame: string; outcome: CallOutcome } {
  switch (response.kind) {
    case 'response':
      return responseReply(meta, response.status, response.contentType, response.body);
    case 'timeout':
    case 'connection_error':
    case 'too_large':
      return { frame: encodeError(meta, 'http_error', 'null', 500), outcome: 'transport_error' };
    case 'queue_full':
      return { frame: encodeError(meta, 'internal_error', '"too_many_requests"'), outcome: 'queue_full' };
    default:
      return assertNever(response);
  }
}

function responseReply(
  meta: JsonObject,
  status: number,
  contentType: string | undefined,
  body: Buffer,
): { frame: string; outcome: CallOutcome } {
  if (status !== 200) {
    return {
      frame: encodeError(meta, 'http_error', errorBodyJson({ contentType, body }), status),
      outcome: 'http_error',
    };
  }
  if (!isJsonContentType(contentType)) {
    return { frame: encodeError(meta, 'http_error', 'null', 500), outcome: 'http_error' };
  }
  const text = body.toString('utf8');
  const parsed = tryParseJson(text);
  if (!parsed.ok) {
    return { frame: encodeError(meta, 'data_error', JSON.stringify(parsed.message)), outcome: 'data_error' };
  }
  // The body parsed as JSON, so its text can be spliced into the frame as is.
  return { frame: encodeResult(meta, text), outcome: 'ok' };
}

function assertNever(value: never): never {
  throw new Error('unexpected upstream response ' + JSON.stringify(value));
}
