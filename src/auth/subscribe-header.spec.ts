import { MAX_SUBSCRIBE_TOPICS, parseSubscribeHeader } from './subscribe-header';

const topics = (count: number, prefix = 't') => Array.from({ length: count }, (_, i) => `${prefix}${i}`);

describe(parseSubscribeHeader.name, () => {
  it.each<[string, string | undefined, string[]]>([
    ['no header', undefined, []],
    ['an empty header', '', []],
    ['only commas and spaces', ' , ,, ', []],
    ['one topic', 'room/1', ['room/1']],
    ['a list with spaces and tabs', ' a ,\tb/c ,d', ['a', 'b/c', 'd']],
    ['joined header lines and empty elements', 'a, b,, c, a', ['a', 'b', 'c']],
    ['every allowed symbol', 'aZ09:_-/x', ['aZ09:_-/x']],
    ['a 256-character topic', 'x'.repeat(256), ['x'.repeat(256)]],
    ['exactly 100 topics', topics(MAX_SUBSCRIBE_TOPICS).join(','), topics(MAX_SUBSCRIBE_TOPICS)],
    ['101 elements naming 100 topics', [...topics(100), 't0'].join(','), topics(100)],
  ])('accepts %s', (_, header, expected) => {
    expect(parseSubscribeHeader(header)).toEqual({ ok: true, topics: expected });
  });

  it.each<[string, string, string]>([
    ['a dot', 'a, b.c', 'invalid topic "b.c"'],
    ['a space inside a topic', 'a b', 'invalid topic "a b"'],
    ['percent-encoding', 'a%2Fb', 'invalid topic "a%2Fb"'],
    ['an empty part', 'a//b', 'invalid topic "a//b"'],
    ['a leading slash', '/a', 'invalid topic "/a"'],
    ['a non-ASCII letter', 'zoë', 'invalid topic "zoë"'],
    ['a 257-character topic', 'x'.repeat(257), `invalid topic "${'x'.repeat(64)}…"`],
    ['101 topics', topics(101).join(', '), '101 topics, at most 100'],
    ['10,000 topics', topics(10_000).join(','), '10000 topics, at most 100'],
  ])('refuses %s', (_, header, cause) => {
    expect(parseSubscribeHeader(header)).toEqual({ ok: false, reason: `Gateway-Subscribe: ${cause}` });
  });
});
