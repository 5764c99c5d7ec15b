import { MAX_RESUME_OFFER_BYTES, parseOffer, resumeRequestOf } from './resume-offer';

const offer = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');

describe(resumeRequestOf.name, () => {
  it.each<[string, string | undefined, string]>([
    ['no header', undefined, 'none'],
    ['only the lattice protocol', 'v1.gateway-lattice+json', 'none'],
    ['the opt-in', 'v1.gateway-lattice+json, gateway-resume', 'opt-in'],
    ['the opt-in first', 'gateway-resume,v1.gateway-lattice+json', 'opt-in'],
    ['an offer', `v1.gateway-lattice+json, gateway-resume.${offer({ token: 'abc' })}`, 'resume'],
    [
      'an offer beside the opt-in',
      `v1.gateway-lattice+json, gateway-resume, gateway-resume.${offer({ token: 'abc' })}`,
      'resume',
    ],
    ['a lookalike protocol', 'v1.gateway-lattice+json, gateway-resumex', 'none'],
    ['an empty offer', 'v1.gateway-lattice+json, gateway-resume.', 'unreadable'],
  ])('reads %s', (_, header, kind) => {
    expect(resumeRequestOf(header).kind).toBe(kind);
  });
});

describe(parseOffer.name, () => {
  it('reads the token and the positions, topics in path form', () => {
    const sut = parseOffer(offer({ token: 'tok_-1', positions: { 'a.b': [3, 'E1'], c: [0, 'x'] } }));
    expect(sut).toEqual({
      kind: 'resume',
      offer: {
        token: 'tok_-1',
        positions: new Map([
          ['a/b', { offset: 3, epoch: 'E1' }],
          ['c', { offset: 0, epoch: 'x' }],
        ]),
        countReplayed: false,
      },
    });
  });

  it('takes an offer without positions as an empty map', () => {
    expect(parseOffer(offer({ token: 't' }))).toEqual({
      kind: 'resume',
      offer: { token: 't', positions: new Map(), countReplayed: false },
    });
  });

  it.each<[unknown, boolean]>([
    [true, true],
    [false, false],
    [1, false],
    ['true', false],
  ])('reads "count_replayed": %j as %s (only true asks for the count)', (value, countReplayed) => {
    expect(parseOffer(offer({ token: 't', count_replayed: value }))).toEqual({
      kind: 'resume',
      offer: { token: 't', positions: new Map(), countReplayed },
    });
  });

  it.each<[string, string]>([
    ['padding', offer({ token: 't' }) + '='],
    ['non-base64url characters', 'ab+/'],
    ['not JSON', Buffer.from('{token').toString('base64url')],
    ['JSON null', offer(null)],
    ['a JSON array', offer(['t'])],
    ['no token', offer({ positions: {} })],
    ['an empty token', offer({ token: '' })],
    ['a token with other characters', offer({ token: 'a b' })],
    ['a token over 128 characters', offer({ token: 'a'.repeat(129) })],
    ['positions as an array', offer({ token: 't', positions: [] })],
    ['a position that is not a pair', offer({ token: 't', positions: { a: [1] } })],
    ['a negative offset', offer({ token: 't', positions: { a: [-1, 'e'] } })],
    ['a fractional offset', offer({ token: 't', positions: { a: [1.5, 'e'] } })],
    ['an offset beyond safe integers', offer({ token: 't', positions: { a: [2 ** 53, 'e'] } })],
    ['an empty epoch', offer({ token: 't', positions: { a: [1, ''] } })],
    ['an epoch over 64 characters', offer({ token: 't', positions: { a: [1, 'e'.repeat(65)] } })],
    ['an invalid topic', offer({ token: 't', positions: { 'a..b': [1, 'e'] } })],
    ['a topic with a space', offer({ token: 't', positions: { 'a b': [1, 'e'] } })],
    ['an offer over 8 KiB', 'A'.repeat(MAX_RESUME_OFFER_BYTES + 1)],
  ])('refuses %s as unreadable', (_, encoded) => {
    expect(parseOffer(encoded)).toEqual({ kind: 'unreadable' });
  });

  it('reads "__proto__" as an ordinary topic', () => {
    const encoded = Buffer.from('{"token":"t","positions":{"__proto__":[1,"e"]}}').toString('base64url');
    expect(parseOffer(encoded)).toEqual({
      kind: 'resume',
      offer: { token: 't', positions: new Map([['__proto__', { offset: 1, epoch: 'e' }]]), countReplayed: false },
    });
  });
});
