import fc from 'fast-check';
import {
  canonicalJson,
  compareRegisters,
  mergeVariable,
  validateVariable,
  variableKind,
  type JsonValue,
  type RegisterValue,
  type VariableKind,
  type VariableValue,
} from './crdt';

const LAW_RUNS = 1000;

describe(variableKind.name, () => {
  it.each<[string, VariableKind | null]>([
    ['last_seen_counter', 'counter'],
    ['members_set', 'set'],
    ['topic_register', 'register'],
    ['_x_counter', 'counter'],
    ['__counter', 'counter'],
    ['A9_set', 'set'],
    ['x_counter_set', 'set'],
    ['counter', null],
    ['_counter', null],
    ['x_Counter', null],
    ['x_counters', null],
    ['9x_counter', null],
    ['x-y_counter', null],
    ['x.y_set', null],
    ['expires_in', null],
    ['', null],
  ])('%j is of kind %j', (name, kind) => {
    expect(variableKind(name)).toBe(kind);
  });
});

describe(validateVariable.name, () => {
  it.each<[string, unknown]>([
    ['a_counter', 0],
    ['a_counter', Number.MAX_SAFE_INTEGER],
    ['a_set', []],
    ['a_set', ['x', 'x', '']],
    ['a_register', [0, null]],
    ['a_register', [1.5, { nested: [1, 'two'] }]],
    ['a_register', [Number.MAX_VALUE, 'v']],
  ])('accepts %s = %j', (name, value) => {
    expect(validateVariable(name, value)).toBeNull();
  });

  it.each<[string, unknown, string]>([
    ['a_counter', -1, 'must be a non-negative safe integer'],
    ['a_counter', 1.5, 'must be a non-negative safe integer'],
    ['a_counter', '1', 'must be a non-negative safe integer'],
    ['a_counter', Number.MAX_SAFE_INTEGER + 1, 'must be a non-negative safe integer'],
    ['a_counter', null, 'must be a non-negative safe integer'],
    ['a_set', 'x', 'must be an array of strings'],
    ['a_set', ['x', 1], 'must be an array of strings'],
    ['a_set', { x: true }, 'must be an array of strings'],
    ['a_register', 5, 'must be a [version, value] pair'],
    ['a_register', [1], 'must be a [version, value] pair'],
    ['a_register', [1, 2, 3], 'must be a [version, value] pair'],
    ['a_register', [-1, 'v'], 'version must be a finite number >= 0'],
    ['a_register', ['1', 'v'], 'version must be a finite number >= 0'],
    ['a_register', [Number.NaN, 'v'], 'version must be a finite number >= 0'],
    ['a_register', [Number.POSITIVE_INFINITY, 'v'], 'version must be a finite number >= 0'],
    ['a_register', [null, 'v'], 'version must be a finite number >= 0'],
  ])('rejects %s = %j: %s', (name, value, error) => {
    expect(validateVariable(name, value)).toBe(error);
  });

  it('rejects a name without a known suffix whatever the value', () => {
    expect(validateVariable('a_map', {})).toMatch(/^invalid variable name, expected <name>_counter/);
  });
});

describe(mergeVariable.name, () => {
  it.each<[string, VariableKind, VariableValue | undefined, VariableValue, VariableValue, VariableValue | undefined]>([
    ['a new counter takes the incoming value', 'counter', undefined, 5, 5, 5],
    ['a new counter of 0 is still a change', 'counter', undefined, 0, 0, 0],
    ['a higher counter wins', 'counter', 5, 7, 7, 7],
    ['a lower counter changes nothing', 'counter', 5, 3, 5, undefined],
    ['an equal counter changes nothing', 'counter', 5, 5, 5, undefined],
    ['a new set is stored sorted and unique', 'set', undefined, ['b', 'a', 'b'], ['a', 'b'], ['a', 'b']],
    ['a new empty set is a change', 'set', undefined, [], [], []],
    [
      'a set delta holds only added elements',
      'set',
      ['a', 'c'],
      ['d', 'c', 'b', 'b'],
      ['a', 'b', 'c', 'd'],
      ['b', 'd'],
    ],
    ['a set with nothing new changes nothing', 'set', ['a', 'b'], ['b', 'a', 'a'], ['a', 'b'], undefined],
    ['an empty incoming set changes nothing', 'set', ['a'], [], ['a'], undefined],
    ['a new register takes the incoming value', 'register', undefined, [1, 'x'], [1, 'x'], [1, 'x']],
    ['a higher register version wins', 'register', [1, 'z'], [2, 'a'], [2, 'a'], [2, 'a']],
    ['a lower register version loses', 'register', [2, 'a'], [1, 'z'], [2, 'a'], undefined],
    ['on a version tie the greater canonical JSON wins', 'register', [1, 'a'], [1, 'b'], [1, 'b'], [1, 'b']],
    ['on a version tie the smaller canonical JSON loses', 'register', [1, 'b'], [1, 'a'], [1, 'b'], undefined],
    ['on a version tie 10 beats "z" because `1` sorts after `"`', 'register', [3, 'z'], [3, 10], [3, 10], [3, 10]],
    [
      'an equal register changes nothing',
      'register',
      [1, { a: 1, b: 2 }],
      [1, { b: 2, a: 1 }],
      [1, { a: 1, b: 2 }],
      undefined,
    ],
  ])('%s', (_fact, kind, current, incoming, value, delta) => {
    expect(mergeVariable(kind, current, incoming)).toEqual({ value, delta });
  });

  it.each<[VariableKind, VariableValue]>([
    ['counter', ['a']],
    ['set', 1],
    ['set', [1, 'x']],
    ['register', 1],
    ['register', ['a', 'b']],
  ])('throws a TypeError when a %s is given %j', (kind, value) => {
    expect(() => mergeVariable(kind, undefined, value)).toThrow(TypeError);
  });
});

describe(canonicalJson.name, () => {
  it.each<[string, JsonValue, string]>([
    ['keeps primitives as JSON.stringify does', 'a"b', '"a\\"b"'],
    ['writes null', null, 'null'],
    ['sorts object keys', { b: 1, a: 2 }, '{"a":2,"b":1}'],
    [
      'sorts keys at every depth',
      { z: [{ y: 1, x: 2 }], a: { d: null, c: true } },
      '{"a":{"c":true,"d":null},"z":[{"x":2,"y":1}]}',
    ],
    ['keeps array order', [3, 1, 2], '[3,1,2]'],
    ['sorts keys by JS string order', { b: 0, B: 0, a: 0 }, '{"B":0,"a":0,"b":0}'],
    ['keeps a __proto__ key as data', JSON.parse('{"__proto__":1,"a":2}') as JsonValue, '{"__proto__":1,"a":2}'],
  ])('%s', (_fact, value, text) => {
    expect(canonicalJson(value)).toBe(text);
  });
});

describe(compareRegisters.name, () => {
  it.each<[RegisterValue, RegisterValue, number]>([
    [[2, 'a'], [1, 'z'], 1],
    [[1, 'z'], [2, 'a'], -1],
    [[1, 'b'], [1, 'a'], 1],
    [[1, { a: 1, b: 2 }], [1, { b: 2, a: 1 }], 0],
  ])('compares %j with %j as %d', (a, b, order) => {
    expect(compareRegisters(a, b)).toBe(order);
  });
});

describe('CRDT laws', () => {
  const version = fc.oneof(fc.nat(3), fc.double({ min: 0, max: 1e6, noNaN: true }));
  const lawCases: [VariableKind, fc.Arbitrary<VariableValue>][] = [
    ['counter', fc.oneof(fc.nat(20), fc.maxSafeNat())],
    ['set', fc.array(fc.constantFrom('a', 'b', 'c', 'd', 'e', '', 'é', 'Z'), { maxLength: 6 })],
    [
      'register',
      fc.tuple(
        version,
        fc.json({ maxDepth: 2 }).map((text) => JSON.parse(text) as JsonValue),
      ),
    ],
  ];

  describe.each(lawCases)('%s', (kind, raw) => {
    const state = raw.map((value) => mergeVariable(kind, undefined, value).value);
    const join = (a: VariableValue, b: VariableValue): VariableValue => mergeVariable(kind, a, b).value;
    const same = (a: VariableValue, b: VariableValue): boolean => canonicalJson(a) === canonicalJson(b);

    it('merge is commutative', () => {
      fc.assert(
        fc.property(state, state, (a, b) => same(join(a, b), join(b, a))),
        { numRuns: LAW_RUNS },
      );
    });

    it('merge is associative', () => {
      fc.assert(
        fc.property(state, state, state, (a, b, c) => same(join(join(a, b), c), join(a, join(b, c)))),
        { numRuns: LAW_RUNS },
      );
    });

    it('merge is idempotent and reports no change', () => {
      fc.assert(
        fc.property(state, (a) => same(join(a, a), a) && mergeVariable(kind, a, a).delta === undefined),
        { numRuns: LAW_RUNS },
      );
    });

    it('merging the delta into the old value gives the merged value', () => {
      fc.assert(
        fc.property(state, raw, (a, b) => {
          const { value, delta } = mergeVariable(kind, a, b);
          return delta === undefined ? same(value, a) : same(join(a, delta), value);
        }),
        { numRuns: LAW_RUNS },
      );
    });
  });
});
