import { jsonText } from './json-text';

describe(jsonText.name, () => {
  it.each([
    [null],
    [1],
    ['a"b'],
    [[1, [2, {}], 'x']],
    [{ a: { b: [null, true] }, '': -0.5 }],
    [JSON.parse('{"__proto__":[1]}')],
  ])('encodes %j as JSON.stringify does', (value) => {
    expect(jsonText(value)).toBe(JSON.stringify(value));
  });

  // Node 20 to 24 throw RangeError from JSON.stringify at this depth (Node 26's V8 does not): jsonText never recurses.
  it('encodes values nested deeper than JSON.stringify can on Node 20 to 24', () => {
    const text = '['.repeat(20_000) + '{"a":1}' + ']'.repeat(20_000);
    expect(jsonText(JSON.parse(text))).toBe(text);
  });
});
