import { CLOSE_INVALID_PAYLOAD, CLOSE_MESSAGE_TOO_BIG, CLOSE_UNSUPPORTED_DATA } from './close-codes';
import { activeSeconds, callFromJson, checkCall, isFrameFault, isPlainObject, parseClientFrame } from './frame-codec';
import type { FrameFault } from './faults';
import type { ClientCall } from './frames';

const MAX = 1024;

function text(value: string): Buffer {
  return Buffer.from(value, 'utf8');
}

function call(method: string, meta: Record<string, unknown>): ClientCall {
  return { method, meta, args: [], kwargs: {} };
}

describe(parseClientFrame.name, () => {
  it('parses a well-formed call', () => {
    expect(parseClientFrame(text('["rooms.history",{"request_id":1},[1,"a"],{"k":null}]'), false, MAX)).toEqual({
      method: 'rooms.history',
      meta: { request_id: 1 },
      args: [1, 'a'],
      kwargs: { k: null },
    });
  });

  it('refuses a binary frame with 1003', () => {
    const fault = parseClientFrame(text('["a",{"request_id":1},[],{}]'), true, MAX) as FrameFault;
    expect(fault).toEqual({
      kind: 'frame_fault',
      closeCode: CLOSE_UNSUPPORTED_DATA,
      text: 'binary frames are not supported',
    });
  });

  it('refuses a binary frame over the limit as binary', () => {
    expect(parseClientFrame(Buffer.alloc(MAX + 1), true, MAX)).toMatchObject({ closeCode: CLOSE_UNSUPPORTED_DATA });
  });

  it('accepts a frame of exactly the limit', () => {
    const frame = '["a",{"request_id":1},[],{}]';
    expect(isFrameFault(parseClientFrame(text(frame), false, Buffer.byteLength(frame)))).toBe(false);
  });

  it('refuses a frame one byte over the limit with 1009 and says both sizes', () => {
    const frame = '["a",{"request_id":1},[],{}]';
    const limit = Buffer.byteLength(frame) - 1;
    expect(parseClientFrame(text(frame), false, limit)).toEqual({
      kind: 'frame_fault',
      closeCode: CLOSE_MESSAGE_TOO_BIG,
      text: `frame of ${limit + 1} bytes exceeds the limit of ${limit} bytes`,
    });
  });

  it('counts bytes, not characters, against the limit', () => {
    const frame = '["a",{"request_id":1},["ééé"],{}]';
    expect(parseClientFrame(text(frame), false, frame.length)).toMatchObject({ closeCode: CLOSE_MESSAGE_TOO_BIG });
  });

  it.each([
    ['an empty frame', ''],
    ['plain text', 'hello'],
    ['a trailing comma', '["a",{},[],{},]'],
    ['an unterminated array', '["a",{},[],{}'],
    ['single quotes', "['a',{},[],{}]"],
    ['NaN', '["a",{"request_id":NaN},[],{}]'],
    ['two JSON values', '[] []'],
  ])('refuses %s as invalid JSON with 1007', (_case, frame) => {
    const fault = parseClientFrame(text(frame), false, MAX) as FrameFault;
    expect(fault.kind).toBe('frame_fault');
    expect(fault.closeCode).toBe(CLOSE_INVALID_PAYLOAD);
    expect(fault.text).toMatch(/^invalid JSON: ./);
  });

  it.each([
    ['an object', '{"method":"a"}'],
    ['a string', '"a"'],
    ['null', 'null'],
    ['three elements', '["a",{},[]]'],
    ['five elements', '["a",{},[],{},1]'],
    ['a numeric method', '[1,{},[],{}]'],
    ['an array meta', '["a",[],[],{}]'],
    ['a null meta', '["a",null,[],{}]'],
    ['an object args', '["a",{},{},{}]'],
    ['an array kwargs', '["a",{},[],[]]'],
    ['a null kwargs', '["a",{},[],null]'],
  ])('refuses %s as the wrong shape with 1007', (_case, frame) => {
    expect(parseClientFrame(text(frame), false, MAX)).toEqual({
      kind: 'frame_fault',
      closeCode: CLOSE_INVALID_PAYLOAD,
      text: 'frame must be a JSON array [method, meta, args, kwargs] of types [string, object, array, object]',
    });
  });

  it('keeps a client __proto__ key as plain data', () => {
    const parsed = parseClientFrame(text('["a",{"__proto__":{"request_id":1}},[],{}]'), false, MAX) as ClientCall;
    expect(Object.keys(parsed.meta)).toEqual(['__proto__']);
    expect(parsed.meta.request_id).toBeUndefined();
  });
});

describe(callFromJson.name, () => {
  it('returns the four parts of a well-shaped array', () => {
    expect(callFromJson(['m', { a: 1 }, [2], { b: 3 }])).toEqual({
      method: 'm',
      meta: { a: 1 },
      args: [2],
      kwargs: { b: 3 },
    });
  });

  it.each([[undefined], [[]], [['m', {}, [], {}, {}]], [['m', {}, [], 'x']]])('refuses %p', (value) => {
    expect(callFromJson(value)).toMatchObject({ kind: 'frame_fault', closeCode: CLOSE_INVALID_PAYLOAD });
  });
});

describe(checkCall.name, () => {
  it.each([
    ['a numeric request id', call('rooms.history', { request_id: 0 })],
    ['a string request id', call('ping', { request_id: 'abc-1_2' })],
    ['extra meta keys', call('ping', { request_id: 1, active: 'x', other: [1] })],
  ])('lets a call with %s go upstream', (_case, c) => {
    expect(checkCall(c)).toBeNull();
  });

  it.each([
    ['an empty method', call('', { request_id: 1 })],
    ['a method with a slash', call('a/b', { request_id: 1 })],
    ['a reserved method', call('gateway.authorize_connection', { request_id: 1 })],
    ['a bad method and a bad request id', call('a..b', {})],
  ])('answers a call with %s with "invalid method"', (_case, c) => {
    expect(checkCall(c)).toEqual({ kind: 'call_fault', text: 'invalid method' });
  });

  it.each([
    ['no request id', call('a', {})],
    ['a null request id', call('a', { request_id: null })],
    ['a negative request id', call('a', { request_id: -1 })],
    ['a fractional request id', call('a', { request_id: 1.5 })],
    ['an unsafe request id', call('a', { request_id: 2 ** 53 })],
    ['an empty string request id', call('a', { request_id: '' })],
    ['a 37-char request id', call('a', { request_id: 'r'.repeat(37) })],
    ['an object request id', call('a', { request_id: {} })],
  ])('answers a call with %s with "invalid request id"', (_case, c) => {
    expect(checkCall(c)).toEqual({ kind: 'call_fault', text: 'invalid request id' });
  });
});

describe(activeSeconds.name, () => {
  it.each([
    [{ active: 0 }, 0],
    [{ active: 30 }, 30],
    [{ active: Number.MAX_SAFE_INTEGER }, Number.MAX_SAFE_INTEGER],
    [{}, null],
    [{ active: -1 }, null],
    [{ active: 1.5 }, null],
    [{ active: 1e300 }, null],
    [{ active: '30' }, null],
    [{ active: null }, null],
    [{ active: true }, null],
    [{ active: [30] }, null],
  ])('reads %p as %p', (meta, expected) => {
    expect(activeSeconds(meta)).toBe(expected);
  });
});

describe(isPlainObject.name, () => {
  it.each([
    [{}, true],
    [{ a: 1 }, true],
    [[], false],
    [null, false],
    [undefined, false],
    ['{}', false],
    [1, false],
  ])('says %p is a plain object: %p', (value, expected) => {
    expect(isPlainObject(value)).toBe(expected);
  });
});

describe(isFrameFault.name, () => {
  it('tells a fault from a call', () => {
    expect([isFrameFault(parseClientFrame(text('x'), false, MAX)), isFrameFault(call('a', {}))]).toEqual([true, false]);
  });
});

describe('SPEC §4.1 rule 4: nested too deep', () => {
  const TOO_DEEP = { kind: 'call_fault', text: 'nested too deep' };
  /** A frame whose deepest point is `levels` (the frame array is level 1), placed in `where`. */
  function frameNested(levels: number, where: 'meta' | 'args' | 'kwargs'): string {
    const inner = '['.repeat(levels - 2) + ']'.repeat(levels - 2);
    if (where === 'meta') return `["echo",{"request_id":1,"deep":${inner}},[],{}]`;
    if (where === 'args') return `["echo",{"request_id":1},${'['.repeat(levels - 1)}${']'.repeat(levels - 1)},{}]`;
    return `["echo",{"request_id":1},[],{"deep":${inner}}]`;
  }
  function checked(frame: string): unknown {
    const out = parseClientFrame(text(frame), false, 10 * 1024 * 1024);
    if (isFrameFault(out)) throw new Error(`unexpected frame fault ${out.text}`);
    return checkCall(out, Buffer.byteLength(frame));
  }

  it.each(['meta', 'args', 'kwargs'] as const)('accepts 128 levels in %s and refuses 129', (where) => {
    expect(checked(frameNested(128, where))).toBeNull();
    expect(checked(frameNested(129, where))).toEqual(TOO_DEEP);
  });

  it.each(['meta', 'args', 'kwargs'] as const)('refuses 5,000 and 200,000 levels in %s without throwing', (where) => {
    expect(checked(frameNested(5_000, where))).toEqual(TOO_DEEP);
    expect(checked(frameNested(200_000, where))).toEqual(TOO_DEEP);
  });

  it('checks the method and the request id first', () => {
    const deepArgs = '['.repeat(300) + ']'.repeat(300);
    expect(checked(`["gateway.x",{"request_id":1},${deepArgs},{}]`)).toEqual({
      kind: 'call_fault',
      text: 'invalid method',
    });
    expect(checked(`["x",{"request_id":-1},${deepArgs},{}]`)).toEqual({
      kind: 'call_fault',
      text: 'invalid request id',
    });
  });

  it('walks every frame when no size is given', () => {
    const call = parseClientFrame(text(frameNested(129, 'args')), false, MAX) as ClientCall;
    expect(checkCall(call)).toEqual(TOO_DEEP);
  });
});
