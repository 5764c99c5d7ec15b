/**
 * What SPEC §4.1 says the gateway must answer to one text message, written
 * independently of src/protocol (a raw-text bracket scan for depth, the
 * regexes copied from the SPEC): a reply frame, or a fatal close.
 */
export type Expectation =
  | { readonly kind: 'reply'; readonly reply: string }
  | { readonly kind: 'close'; readonly code: number; readonly fatal: boolean };

const METHOD = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;
const STRING_ID = /^[A-Za-z0-9_-]{1,36}$/;
const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

export const RESULT = 'result';

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Deepest nesting of brackets outside strings in JSON text; the outermost value is level 1. */
export function textDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) max = Math.max(max, ++depth);
    else if (c === 0x5d || c === 0x7d) depth--;
  }
  return max;
}

/** The expectation for a text message of `payload` bytes with MAX_FRAME_BYTES = `maxFrameBytes`. */
export function expectText(payload: Buffer, maxFrameBytes: number): Expectation {
  if (payload.length > maxFrameBytes) return { kind: 'close', code: 1009, fatal: true };
  let text: string;
  try {
    text = decoder.decode(payload);
  } catch {
    return { kind: 'close', code: 1007, fatal: true };
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { kind: 'close', code: 1007, fatal: true };
  }
  if (!Array.isArray(value) || value.length !== 4) return { kind: 'close', code: 1007, fatal: true };
  const [method, meta, args, kwargs] = value as unknown[];
  if (typeof method !== 'string' || !isObject(meta) || !Array.isArray(args) || !isObject(kwargs))
    return { kind: 'close', code: 1007, fatal: true };
  if (!METHOD.test(method) || method.startsWith('gateway.')) return { kind: 'reply', reply: 'invalid method' };
  const id = meta.request_id;
  const isId =
    (typeof id === 'number' && Number.isSafeInteger(id) && id >= 0) || (typeof id === 'string' && STRING_ID.test(id));
  if (!isId) return { kind: 'reply', reply: 'invalid request id' };
  if (textDepth(text) > 128) return { kind: 'reply', reply: 'nested too deep' };
  return { kind: 'reply', reply: RESULT };
}
