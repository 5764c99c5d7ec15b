import { encodeResumeOffer, MAX_RESUME_OFFER_LENGTH } from './resume-offer';
import type { TopicPosition } from './topic-positions';

/** P decoded as the gateway reads it (src/gateway/resume-offer.ts). */
function decode(protocol: string): unknown {
  expect(protocol).toMatch(/^gateway-resume\.[A-Za-z0-9_-]+$/);
  return JSON.parse(Buffer.from(protocol.slice('gateway-resume.'.length), 'base64url').toString('utf8'));
}

describe(encodeResumeOffer.name, () => {
  it('encodes the token and every position as compact JSON in base64url', () => {
    const offer = encodeResumeOffer('tok_-1', [
      ['a.b', 3, 'E1'],
      ['c', 1, 'E2'],
    ]);
    expect(decode(offer.protocol)).toEqual({
      token: 'tok_-1',
      count_replayed: true,
      positions: { 'a.b': [3, 'E1'], c: [1, 'E2'] },
    });
    expect(offer.protocol.slice('gateway-resume.'.length)).toBe(
      Buffer.from('{"token":"tok_-1","count_replayed":true,"positions":{"a.b":[3,"E1"],"c":[1,"E2"]}}').toString(
        'base64url',
      ),
    );
    expect(offer.omitted).toEqual([]);
  });

  it('with no positions, still an object', () => {
    expect(decode(encodeResumeOffer('t', []).protocol)).toEqual({ token: 't', count_replayed: true, positions: {} });
  });

  it('keeps P within 8 KiB: the most recent topics keep their positions, the rest are left out and named', () => {
    const positions: TopicPosition[] = Array.from(
      { length: 400 },
      (_, i) => [`room.number-${i}`, 100_000 + i, 'epoch-AbCdEfGh'] as const,
    );
    const offer = encodeResumeOffer('T'.repeat(32), positions);
    const p = offer.protocol.slice('gateway-resume.'.length);
    expect(p.length).toBeLessThanOrEqual(MAX_RESUME_OFFER_LENGTH);
    const kept = Object.keys((decode(offer.protocol) as { positions: object }).positions);
    expect(kept.length).toBeGreaterThan(100);
    expect([...kept, ...offer.omitted]).toEqual(positions.map(([topic]) => topic));
    // As full as it can be: one more position would not fit.
    const withOneMore = encodeResumeOffer('T'.repeat(32), positions.slice(0, kept.length + 1), Number.MAX_SAFE_INTEGER);
    expect(withOneMore.protocol.length - 'gateway-resume.'.length).toBeGreaterThan(MAX_RESUME_OFFER_LENGTH);
  });

  it('fills exactly up to the limit given', () => {
    const one: TopicPosition[] = [['t', 1, 'E']];
    const full = encodeResumeOffer('x', one, Number.MAX_SAFE_INTEGER).protocol.length - 'gateway-resume.'.length;
    expect(encodeResumeOffer('x', one, full).omitted).toEqual([]);
    expect(encodeResumeOffer('x', one, full - 1).omitted).toEqual(['t']);
  });
});
