import { MAX_FRAME_DEPTH, isNestedDeeperThan, stringifyIteratively } from './json-depth';

function nestedArrays(levels: number, inner = ''): string {
  return '['.repeat(levels) + inner + ']'.repeat(levels);
}

describe(isNestedDeeperThan.name, () => {
  it.each<[string, unknown, number, boolean]>([
    ['a scalar', 1, 0, false],
    ['null', null, 0, false],
    ['an empty array at limit 1', [], 1, false],
    ['an empty array at limit 0', [], 0, true],
    ['3 levels at limit 3', JSON.parse('[{"a":[1]}]'), 3, false],
    ['4 levels at limit 3', JSON.parse('[{"a":[[]]}]'), 3, true],
    ['the deep branch last', JSON.parse('[1,{},[],{"a":{"b":{"c":[]}}}]'), 4, true],
    ['128 levels at the frame limit', JSON.parse(nestedArrays(128)), MAX_FRAME_DEPTH, false],
    ['129 levels at the frame limit', JSON.parse(nestedArrays(129)), MAX_FRAME_DEPTH, true],
    ['100,000 levels (far past any stack)', JSON.parse(nestedArrays(100_000)), MAX_FRAME_DEPTH, true],
  ])('%s', (_what, value, limit, expected) => {
    expect(isNestedDeeperThan(value, limit)).toBe(expected);
  });

  it('counts from the level it is given', () => {
    const value = JSON.parse(nestedArrays(127)) as unknown;
    expect(isNestedDeeperThan(value, MAX_FRAME_DEPTH, 2)).toBe(false);
    expect(isNestedDeeperThan(value, MAX_FRAME_DEPTH, 3)).toBe(true);
  });
});

describe(stringifyIteratively.name, () => {
  it.each<[string, unknown]>([
    ['null', null],
    ['a string with escapes', 'a"b\\c\n\u0000é😀'],
    ['numbers', [0, -1, 1.5, 1e300, -0, 2 ** 53]],
    ['booleans', [true, false]],
    ['empty containers', [[], {}, [[]], { a: {} }]],
    ['an object with odd keys', JSON.parse('{"__proto__":1,"":2,"a\\"b":[3],"constructor":{"x":null}}')],
    ['mixed nesting', { request_id: 1, a: [1, { b: [2, [3, { c: 'd' }]] }], e: null }],
  ])('writes %s exactly as JSON.stringify does', (_what, value) => {
    expect(stringifyIteratively(value)).toBe(JSON.stringify(value));
  });

  it('writes 100,000 levels without recursion', () => {
    const text = nestedArrays(100_000, '{"a":1}');
    expect(stringifyIteratively(JSON.parse(text))).toBe(text);
  });
});
