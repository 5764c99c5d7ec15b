import { requestIdOf } from './request-id';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe(requestIdOf.name, () => {
  it.each(['abc-123', 'x', 'a'.repeat(128), 'req:1/2?3'])("keeps the caller's id %p", (id) => {
    expect(requestIdOf(id)).toBe(id);
  });

  it.each<[string, string | string[] | undefined]>([
    ['no header', undefined],
    ['an empty one', ''],
    ['one with a space', 'a b'],
    ['one over 128 characters', 'a'.repeat(129)],
    ['one with a control character', 'a\u0007b'],
    ['one with non-ASCII text', 'é'],
    ['a repeated header', ['a', 'b']],
  ])('generates a UUID for %s', (_case, header) => {
    expect(requestIdOf(header)).toMatch(UUID);
  });

  it('generates a different id each time', () => {
    expect(requestIdOf(undefined)).not.toBe(requestIdOf(undefined));
  });
});
