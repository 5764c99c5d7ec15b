import { base64UrlLength, base64UrlOf, utf8Length } from './base64url';

describe(base64UrlOf.name, () => {
  const cases = [
    '',
    'f',
    'fo',
    'foo',
    'foob',
    'fooba',
    'foobar',
    '{"token":"abc","positions":{}}',
    'ünïcødé ✓ 𝄞',
    '\u00ff\u00fe?>',
    '\ud800 lone',
    'x'.repeat(1000),
  ];

  it.each(cases)('encodes %j as Buffer does (base64url, no padding)', (text) => {
    const expected = Buffer.from(text, 'utf8').toString('base64url');
    expect(base64UrlOf(text)).toBe(expected);
    expect(base64UrlLength(Buffer.byteLength(text, 'utf8'))).toBe(expected.length);
    expect(utf8Length(text)).toBe(Buffer.byteLength(text, 'utf8'));
  });

  it('uses only the URL-safe alphabet', () => {
    const bytes = String.fromCharCode(...Array.from({ length: 256 }, (_, i) => i));
    expect(base64UrlOf(bytes)).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(base64UrlOf(bytes)).toBe(Buffer.from(bytes, 'utf8').toString('base64url'));
  });
});
