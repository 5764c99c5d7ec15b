import fc from 'fast-check';
import { CLOSE_INVALID_PAYLOAD, CLOSE_MESSAGE_TOO_BIG, CLOSE_UNSUPPORTED_DATA } from './close-codes';
import { activeSeconds, checkCall, isFrameFault, isPlainObject, parseClientFrame } from './frame-codec';
import type { FrameFault } from './faults';
import type { ClientCall } from './frames';

const MAX_FRAME_BYTES = 1024 * 1024;
const FRAME_FAULT_CODES = [CLOSE_INVALID_PAYLOAD, CLOSE_UNSUPPORTED_DATA, CLOSE_MESSAGE_TOO_BIG];
const CALL_FAULT_TEXTS = ['invalid method', 'invalid request id', 'nested too deep'];
/** SPEC §4.1, written out independently of identifiers.ts. */
const SPEC_METHOD = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;

let framesPushed = 0;

/**
 * Pushes one message through the whole §4.1 pipeline and checks what must hold
 * for every input: a call or a fault, never a throw, and well-typed results.
 */
function pushThrough(data: Buffer, isBinary = false, maxFrameBytes = MAX_FRAME_BYTES): ClientCall | FrameFault {
  framesPushed++;
  const out = parseClientFrame(data, isBinary, maxFrameBytes);
  if (isFrameFault(out)) {
    expect(FRAME_FAULT_CODES).toContain(out.closeCode);
    expect(out.text).not.toBe('');
    return out;
  }
  expect(typeof out.method).toBe('string');
  expect(isPlainObject(out.meta) && Array.isArray(out.args) && isPlainObject(out.kwargs)).toBe(true);
  const fault = checkCall(out);
  if (fault !== null) expect(CALL_FAULT_TEXTS).toContain(fault.text);
  const active = activeSeconds(out.meta);
  if (active !== null) expect(Number.isSafeInteger(active) && active >= 0).toBe(true);
  return out;
}

function utf8(text: string): Buffer {
  return Buffer.from(text, 'utf8');
}

/** What the wire carries: the value after one JSON encode/decode (-0 → 0, undefined dropped…). */
function wire<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

function hasCallShape(value: unknown): boolean {
  return (
    Array.isArray(value) &&
    value.length === 4 &&
    typeof value[0] === 'string' &&
    isPlainObject(value[1]) &&
    Array.isArray(value[2]) &&
    isPlainObject(value[3])
  );
}

function expectedActive(meta: Record<string, unknown>): number | null {
  const active = meta.active;
  return typeof active === 'number' && Number.isInteger(active) && active >= 0 && active <= Number.MAX_SAFE_INTEGER
    ? active
    : null;
}

/** Nesting depth, measured without recursion. */
function depthOf(value: unknown): number {
  let depth = 0;
  let node = value;
  while (node !== null && typeof node === 'object') {
    depth++;
    node = Array.isArray(node) ? node[0] : Object.values(node as object)[0];
  }
  return depth;
}

const json = fc.jsonValue({ maxDepth: 4 });
const methodArb = fc
  .array(fc.stringMatching(/^[A-Za-z0-9_-]{1,8}$/), { minLength: 1, maxLength: 5 })
  .map((parts) => parts.join('.'))
  .filter((method) => !method.startsWith('gateway.'));
const requestIdArb = fc.oneof(
  fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
  fc.stringMatching(/^[A-Za-z0-9_-]{1,36}$/),
);
const activeArb = fc.oneof(fc.constant(undefined), fc.nat(), fc.integer(), fc.double(), fc.string(), json);
const objectArb = fc.dictionary(fc.string(), json, { maxKeys: 6 });
const anyElement = fc.oneof(
  fc.string(),
  objectArb,
  fc.array(json, { maxLength: 4 }),
  fc.constantFrom(null, true, false, 0, -1, 1.5),
  json,
);
const hugeNumberText = fc.oneof(
  fc.bigInt({ min: -(10n ** 400n), max: 10n ** 400n }).map(String),
  fc.tuple(fc.integer({ min: -9, max: 9 }), fc.integer({ min: -400, max: 400 })).map(([m, e]) => `${m}e${e}`),
  fc.tuple(fc.nat(), fc.nat()).map(([i, f]) => `${i}.${f}`),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((d) => JSON.stringify(d)),
  fc.constantFrom('9007199254740991', '9007199254740992', '-0', '0.0', '1e2', '1E+2', '1e-400', '1e400', '-1e400'),
);

describe(parseClientFrame.name, () => {
  it('yields a call for any JSON value of the call shape and a 1007 fault for any other', () => {
    fc.assert(
      fc.property(json, (value) => {
        const out = pushThrough(utf8(JSON.stringify(value)));
        expect(isFrameFault(out) ? out.closeCode : 'call').toBe(hasCallShape(value) ? 'call' : CLOSE_INVALID_PAYLOAD);
      }),
      { numRuns: 2500 },
    );
  });

  it('yields a call or a fault for any byte buffer, invalid UTF-8 included', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), fc.boolean(), (bytes, isBinary) => {
        const out = pushThrough(Buffer.from(bytes), isBinary);
        if (isBinary) expect(out).toMatchObject({ closeCode: CLOSE_UNSUPPORTED_DATA });
      }),
      { numRuns: 2000 },
    );
  });

  it('keeps a call whose strings hold invalid UTF-8 a call', () => {
    const invalidUtf8 = fc
      .uint8Array({ minLength: 1, maxLength: 40 })
      .map((bytes) => Buffer.from(bytes.map((b) => 0x80 | b)));
    fc.assert(
      fc.property(invalidUtf8, (bytes) => {
        const frame = Buffer.concat([utf8('["m",{"request_id":1},["'), bytes, utf8('"],{"k":"'), bytes, utf8('"}]')]);
        const out = pushThrough(frame);
        expect(isFrameFault(out)).toBe(false);
        expect(checkCall(out as ClientCall)).toBeNull();
      }),
      { numRuns: 1000 },
    );
  });

  it('classifies 4-element arrays of random element types by the shape rule alone', () => {
    fc.assert(
      fc.property(fc.tuple(anyElement, anyElement, anyElement, anyElement), (value) => {
        const out = pushThrough(utf8(JSON.stringify(value)));
        expect(isFrameFault(out)).toBe(!hasCallShape(wire(value)));
      }),
      { numRuns: 2000 },
    );
  });

  it('refuses arrays of any length other than 4 with 1007', () => {
    fc.assert(
      fc.property(
        fc.array(anyElement, { maxLength: 8 }).filter((a) => a.length !== 4),
        (value) => {
          expect(pushThrough(utf8(JSON.stringify(value)))).toMatchObject({
            kind: 'frame_fault',
            closeCode: CLOSE_INVALID_PAYLOAD,
          });
        },
      ),
      { numRuns: 800 },
    );
  });

  it('round-trips valid calls with random meta, args and kwargs', () => {
    fc.assert(
      fc.property(
        methodArb,
        objectArb,
        requestIdArb,
        activeArb,
        fc.array(json, { maxLength: 5 }),
        objectArb,
        (method, extra, requestId, active, args, kwargs) => {
          const meta = { ...extra, request_id: requestId, ...(active === undefined ? {} : { active }) };
          const out = pushThrough(utf8(JSON.stringify([method, meta, args, kwargs])));
          expect(out).toEqual({ method, meta: wire(meta), args: wire(args), kwargs: wire(kwargs) });
          const call = out as ClientCall;
          expect(checkCall(call)).toBeNull();
          expect(activeSeconds(call.meta)).toBe(expectedActive(wire(meta)));
        },
      ),
      { numRuns: 2500 },
    );
  });

  it('answers a call with "invalid method" exactly when its method breaks the SPEC §4.1 rule', () => {
    const anyMethod = fc.oneof(
      fc.string(),
      methodArb,
      methodArb.map((m) => 'gateway.' + m),
      fc.string({ unit: 'binary' }),
    );
    fc.assert(
      fc.property(anyMethod, requestIdArb, (method, requestId) => {
        const out = pushThrough(utf8(JSON.stringify([method, { request_id: requestId }, [], {}])));
        const isValid = SPEC_METHOD.test(method) && !method.startsWith('gateway.');
        expect(checkCall(out as ClientCall)).toEqual(isValid ? null : { kind: 'call_fault', text: 'invalid method' });
      }),
      { numRuns: 1000 },
    );
  });

  it('reads huge, tiny and odd numbers without throwing', () => {
    fc.assert(
      fc.property(hugeNumberText, (n) => {
        const out = pushThrough(utf8(`["m",{"request_id":${n},"active":${n}},[${n}],{"n":${n}}]`));
        const value = JSON.parse(n) as number;
        expect(isFrameFault(out)).toBe(false);
        const call = out as ClientCall;
        const isValidId = Number.isSafeInteger(value) && value >= 0;
        expect(checkCall(call)).toEqual(isValidId ? null : { kind: 'call_fault', text: 'invalid request id' });
        expect(activeSeconds(call.meta)).toBe(isValidId ? value : null);
      }),
      { numRuns: 1000 },
    );
  });

  it('handles nesting 1 to 20000 deep in every position, refusing past 128 levels (SPEC §4.1 rule 4)', () => {
    const positions = ['whole', 'method', 'meta', 'args', 'kwargs', 'unclosed'] as const;
    const depths = fc.oneof(fc.integer({ min: 1, max: 20_000 }), fc.integer({ min: 120, max: 135 }));
    fc.assert(
      fc.property(depths, fc.constantFrom(...positions), (depth, position) => {
        const deepArray = '['.repeat(depth) + ']'.repeat(depth);
        const deepObject = '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
        const frames: Record<(typeof positions)[number], string> = {
          whole: deepArray,
          method: `[${deepArray},{"request_id":1},[],{}]`,
          meta: `["m",{"request_id":1,"deep":${deepObject}},[],{}]`,
          args: `["m",{"request_id":1},${deepArray},{}]`,
          kwargs: `["m",{"request_id":1},[],{"deep":${deepObject}}]`,
          unclosed: `["m",{"request_id":1},${'['.repeat(depth)},{}]`,
        };
        const out = pushThrough(utf8(frames[position]));
        if (position === 'whole' || position === 'method' || position === 'unclosed') {
          expect(out).toMatchObject({ kind: 'frame_fault', closeCode: CLOSE_INVALID_PAYLOAD });
          return;
        }
        const call = out as ClientCall;
        // The frame array is level 1; meta, args and kwargs level 2; the deep value starts at 3 inside meta/kwargs.
        const frameDepth = position === 'args' ? depth + 1 : depth + 2;
        expect(checkCall(call)).toEqual(frameDepth > 128 ? { kind: 'call_fault', text: 'nested too deep' } : null);
        const deep = position === 'meta' ? call.meta.deep : position === 'args' ? call.args : call.kwargs.deep;
        expect(depthOf(deep)).toBe(depth);
      }),
      { numRuns: 120 },
    );
  });

  it('refuses a text frame with 1009 exactly when it is over the limit', () => {
    const frame = '["m",{"request_id":1},[],{}]';
    fc.assert(
      fc.property(fc.nat(2000), fc.nat(2000), (padding, limit) => {
        const data = utf8(frame + ' '.repeat(padding));
        const out = pushThrough(data, false, limit);
        if (data.length > limit) expect(out).toMatchObject({ kind: 'frame_fault', closeCode: CLOSE_MESSAGE_TOO_BIG });
        else expect(out).toEqual({ method: 'm', meta: { request_id: 1 }, args: [], kwargs: {} });
      }),
      { numRuns: 1000 },
    );
  });

  it('has pushed at least 10,000 generated frames through the pipeline', () => {
    expect(framesPushed).toBeGreaterThanOrEqual(10_000);
  });
});
