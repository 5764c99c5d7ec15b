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

/** `["hello", {}, <auth object>]` from the compact JSON text of the authorization response. */
export function encodeHello(authJson: string): string {
  return '["hello",{},' + authJson + ']';
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
  return '["error",' + stringifyIteratively({ ...meta, error_kind: 'validation_error' }) + ',' + JSON.stringify(text) + ']';
}

/** The fixed head of a topic message frame: `["message",{"topic":"a.b"},` — append payload and `]`. */
export function messageFrameHead(topicWire: string): string {
  return '["message",{"topic":' + JSON.stringify(topicWire) + '},';
}

/** `["message", {"topic": "a.b"}, payload]` from the payload's JSON text. */
export function encodeMessage(topicWire: string, payloadJson: string): string {
  return messageFrameHead(topicWire) + payloadJson + ']';
}

/** `["lattice", {"namespace": "a.b"}, data]`. */
export function encodeLattice(namespaceWire: string, data: unknown): string {
  return '["lattice",{"namespace":' + JSON.stringify(namespaceWire) + '},' + JSON.stringify(data) + ']';
}
