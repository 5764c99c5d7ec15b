import { parseLatticeBody, type LatticeBody } from './lattice-body';
import { decodeEntry, encodeEntry } from './lattice-entry';
import { LatticeStore } from './lattice-store';

function body(raw: unknown): LatticeBody {
  const result = parseLatticeBody(raw);
  if (!result.ok) throw new Error(result.message);
  return result.value;
}

const roundTrip = (text: string) => decodeEntry(JSON.parse(text));

describe(encodeEntry.name, () => {
  it('round-trips a body with shared, private, expiry and awkward names', () => {
    const sut = {
      atMs: 1_700_000_000_123,
      body: body({
        shared: {
          room1: {
            last_message_counter: 9_007_199_254_740_991,
            tags_set: ['b', 'a'],
            topic_register: [1.5, { x: [1, null] }],
          },
          __proto__x: {},
        },
        private: { 'u:1': { room1: { last_seen_counter: 3, expires_in: '90s' }, 'room.2': {} } },
      }),
    };
    const back = roundTrip(encodeEntry(sut));
    expect(back).toEqual(sut);
    expect(back.body.private.get('u:1')!.get('room1')!.expiresInMs).toBe(90_000);
  });

  it('keeps a counter above 10^14 exact (no 14-digit re-encoding on the way)', () => {
    const big = 123_456_789_012_345;
    const back = roundTrip(encodeEntry({ atMs: 1, body: body({ shared: { k: { n_counter: big } } }) }));
    expect(back.body.shared.get('k')!.get('n_counter')).toBe(big);
  });

  it.each([
    ['not an object', null],
    ['no time', { s: [], p: [] }],
    ['shared not a list', { a: 1, s: {}, p: [] }],
    ['bad variable', { a: 1, s: [['k', [['n_counter', -1]]]], p: [] }],
    ['bad variable name', { a: 1, s: [['k', [['n', 1]]]], p: [] }],
    ['bad expiry', { a: 1, s: [], p: [['u', [['k', [[], 'soon']]]]] }],
  ])('rejects %s', (_, json) => {
    expect(() => decodeEntry(json)).toThrow(TypeError);
  });
});

describe('LatticeStore.exportNamespace', () => {
  it('gives a body that rebuilds the same state in a fresh store, deadlines included', () => {
    const source = new LatticeStore();
    source.merge(
      'ns',
      body({
        shared: { k: { a_counter: 2, s_set: ['x'] } },
        private: { u1: { k: { r_register: [1, 'v'], expires_in: '10s' } }, u2: { k: {} } },
      }),
      1000,
    );
    const exported = source.exportNamespace('ns', 5000);
    const copy = new LatticeStore();
    copy.merge('ns', roundTrip(encodeEntry({ atMs: 5000, body: exported })).body, 5000);
    for (const user of ['u1', 'u2']) expect(copy.snapshotFor('ns', user)).toEqual(source.snapshotFor('ns', user));
    expect(copy.nextExpiryAt()).toBe(11_000);
  });

  it('leaves out entries already past their deadline', () => {
    const source = new LatticeStore();
    source.merge('ns', body({ private: { u1: { k: { expires_in: '1s' } } } }), 0);
    expect(source.exportNamespace('ns', 1000).private.size).toBe(0);
  });
});
