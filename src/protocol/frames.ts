/**
 * Wire frames (SPEC §3, §4, §6.3, §7, §9) and their encoders.
 * Encoders return the text to send; callers that fan out turn it into one Buffer.
 */
import { stringifyIteratively } from './json-depth';

export type JsonObject = Record<string, unknown>;

/** A parsed client call `[method, meta, args, kwargs]` (seed §2.4). */
export interface ClientCall {
  readonly method: string;
  readonly meta: JsonObject;
  readonly args: unknown[];
  readonly kwargs: JsonObject;
}

/** `error_kind` values of `error` and `fatal_error` frames. */
export type ErrorKind = 'validation_error' | 'http_error' | 'data_error' | 'internal_error';

/** `["hello", meta, <auth object>]` from the compact JSON text of the authorization response; meta `{}` unless resumable (SPEC §12). */
export function encodeHello(authJson: string, metaJson = '{}'): string {
  return '["hello",' + metaJson + ',' + authJson + ']';
}

/**
 * SPEC §12.1/12.3: the hello meta of a resumable session: `{"resume": {"token", "window"}}`,
 * then `"resumed"` when the handshake asked to resume, `"lost"` (wire topics) when it did,
 * and `"replayed"` (how many missed messages follow) when its offer asked for the count.
 */
export function encodeResumeMeta(
  token: string,
  windowSeconds: number,
  resumed?: boolean,
  lostTopics?: readonly string[],
  replayed?: number,
): string {
  let meta = '{"resume":{"token":' + JSON.stringify(token) + ',"window":' + windowSeconds + '}';
  if (resumed !== undefined) meta += ',"resumed":' + resumed;
  if (lostTopics !== undefined) meta += ',"lost":' + JSON.stringify(lostTopics);
  if (replayed !== undefined) meta += ',"replayed":' + replayed;
  return meta + '}';
}

/** `["fatal_error", {"error_kind": …, "http_error"?: status}, data]`; `dataJson` is JSON text. */
export function encodeFatalError(kind: ErrorKind, dataJson: string, httpStatus?: number): string {
  const meta: JsonObject = { error_kind: kind };
  if (httpStatus !== undefined) meta.http_error = httpStatus;
  return '["fatal_error",' + JSON.stringify(meta) + ',' + dataJson + ']';
}

/** `["result", meta, body]` where `bodyJson` is already valid JSON text (spliced, not re-encoded). */
export function encodeResult(meta: JsonObject, bodyJson: string): string {
  return '["result",' + JSON.stringify(meta) + ',' + bodyJson + ']';
}

/**
 * `["error", {...meta, error_kind, http_error?}, data]`. Error fields override
 * same-named keys of the client's meta (SPEC §4.3). `dataJson` is JSON text.
 */
export function encodeError(meta: JsonObject, kind: ErrorKind, dataJson: string, httpStatus?: number): string {
  const replyMeta: JsonObject = { ...meta, error_kind: kind };
  if (httpStatus !== undefined) replyMeta.http_error = httpStatus;
  return '["error",' + JSON.stringify(replyMeta) + ',' + dataJson + ']';
}

/**
 * `["error", {...meta, "error_kind": "validation_error"}, text]` for a call
 * refused by SPEC §4.1. The meta may be nested to any depth (rule 4), so it is
 * written without recursion.
 */
export function encodeCallFault(meta: JsonObject, text: string): string {
  return (
    '["error",' + stringifyIteratively({ ...meta, error_kind: 'validation_error' }) + ',' + JSON.stringify(text) + ']'
  );
}

/** The fixed head of a topic message frame: `["message",{"topic":"a.b"},` — append payload and `]`. */
export function messageFrameHead(topicWire: string): string {
  return '["message",{"topic":' + JSON.stringify(topicWire) + '},';
}

/** The head of a resumable connection's message frame (SPEC §12.4): `["message",{"topic":"a.b","offset":N,"epoch":"E"},`. */
export function positionedMessageFrameHead(topicWire: string, offset: number, epoch: string): string {
  return (
    '["message",{"topic":' +
    JSON.stringify(topicWire) +
    ',"offset":' +
    offset +
    ',"epoch":' +
    JSON.stringify(epoch) +
    '},'
  );
}

/** `["message", {"topic": "a.b"}, payload]` from the payload's JSON text. */
export function encodeMessage(topicWire: string, payloadJson: string): string {
  return messageFrameHead(topicWire) + payloadJson + ']';
}

/** `["lattice", {"namespace": "a.b"}, data]`. */
export function encodeLattice(namespaceWire: string, data: unknown): string {
  return '["lattice",{"namespace":' + JSON.stringify(namespaceWire) + '},' + JSON.stringify(data) + ']';
}
