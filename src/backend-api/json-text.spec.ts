import { jsonText } from './json-text';

describe(jsonText.name, () => {
  it.each([[null], [1], ['a"b'], [[1, [2, {}], 'x']], [{ a: { b: [null, true] }, '': -0.5 }], [JSON.parse('{"__proto__":[1]}')]])('encodes %j as JSON.stringify does', (value) => {
    expect(jsonText(value)).toBe(JSON.stringify(value));
  });

  it('encodes values nested deeper than JSON.stringify can', () => {
    const text = '['.repeat(20_000) + '{"a":1}' + ']'.repeat(20_000);
    expect(() => JSON.stringify(JSON.parse(text))).toThrow(RangeError);
    expect(jsonText(JSON.parse(text))).toBe(text);
  });
});
