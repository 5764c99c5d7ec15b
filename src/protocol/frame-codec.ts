import { CLOSE_INVALID_PAYLOAD, CLOSE_MESSAGE_TOO_BIG, CLOSE_UNSUPPORTED_DATA } from './close-codes';
import { CallFault, FrameFault, callFault, frameFault } from './faults';
import { ClientCall, JsonObject } from './frames';
import { isValidMethod, isValidRequestId } from './identifiers';
import { MAX_FRAME_DEPTH, isNestedDeeperThan } from './json-depth';

const BINARY_FAULT = frameFault(CLOSE_UNSUPPORTED_DATA, 'binary frames are not supported');
const SHAPE_FAULT = frameFault(
  CLOSE_INVALID_PAYLOAD,
  'frame must be a JSON array [method, meta, args, kwargs] of types [string, object, array, object]',
);
const INVALID_METHOD = callFault('invalid method');
const INVALID_REQUEST_ID = callFault('invalid request id');
const NESTED_TOO_DEEP = callFault('nested too deep');
/** A frame nested deeper than MAX_FRAME_DEPTH holds at least that many opening and closing brackets. */
const MIN_TOO_DEEP_BYTES = 2 * (MAX_FRAME_DEPTH + 1);

/**
 * SPEC §4.1, first step: turn one WebSocket message into a call, or a fault that
 * closes the connection (1003 binary, 1009 over `maxFrameBytes`, 1007 not JSON or
 * wrong shape). Never throws.
 */
export function parseClientFrame(data: Buffer, isBinary: boolean, maxFrameBytes: number): ClientCall | FrameFault {
  if (isBinary) return BINARY_FAULT;
  if (data.length > maxFrameBytes) {
    return frameFault(
      CLOSE_MESSAGE_TOO_BIG,
      `frame of ${data.length} bytes exceeds the limit of ${maxFrameBytes} bytes`,
    );
  }
  let value: unknown;
  try {
    value = JSON.parse(data.toString('utf8'));
  } catch (err) {
    return frameFault(CLOSE_INVALID_PAYLOAD, 'invalid JSON: ' + (err as Error).message);
  }
  return callFromJson(value);
}

/** The shape check of SPEC §4.1 on an already parsed value. */
export function callFromJson(value: unknown): ClientCall | FrameFault {
  if (!Array.isArray(value) || value.length !== 4) return SHAPE_FAULT;
  const [method, meta, args, kwargs] = value as unknown[];
  if (typeof method !== 'string' || !isPlainObject(meta) || !Array.isArray(args) || !isPlainObject(kwargs)) {
    return SHAPE_FAULT;
  }
  return { method, meta, args, kwargs };
}

/**
 * SPEC §4.1, second step: method, request id, then nesting (rule 4, deeper
 * than MAX_FRAME_DEPTH with the frame array as level 1). `frameBytes`, the
 * frame's size, lets small frames skip the nesting walk: they cannot be that
 * deep. Returns null when the call may go upstream.
 */
export function checkCall(call: ClientCall, frameBytes = Number.POSITIVE_INFINITY): CallFault | null {
  if (!isValidMethod(call.method)) return INVALID_METHOD;
  if (!isValidRequestId(call.meta.request_id)) return INVALID_REQUEST_ID;
  if (frameBytes >= MIN_TOO_DEEP_BYTES && isTooDeep(call)) return NESTED_TOO_DEEP;
  return null;
}

function isTooDeep(call: ClientCall): boolean {
  // meta, args and kwargs sit at level 2, inside the frame array.
  return (
    isNestedDeeperThan(call.meta, MAX_FRAME_DEPTH, 2) ||
    isNestedDeeperThan(call.args, MAX_FRAME_DEPTH, 2) ||
    isNestedDeeperThan(call.kwargs, MAX_FRAME_DEPTH, 2)
  );
}

/**
 * SPEC §4.1, third step: `meta.active` in seconds when it is a non-negative
 * integer, else null (ignored).
 */
export function activeSeconds(meta: JsonObject): number | null {
  const active = meta.active;
  return typeof active === 'number' && Number.isSafeInteger(active) && active >= 0 ? active : null;
}

/** True for a JSON object (not an array, not null). */
export function isPlainObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Narrowing helper for the union returned by parseClientFrame. */
export function isFrameFault(value: ClientCall | FrameFault): value is FrameFault {
  return (value as FrameFault).kind === 'frame_fault';
}
