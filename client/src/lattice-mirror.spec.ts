import fc from 'fast-check';
import { LatticeMirror, type LatticeChange } from './lattice-mirror';

describe(LatticeMirror.name, () => {
  let sut: LatticeMirror;
  let seen: LatticeChange[][];

  beforeEach(() => {
    sut = new LatticeMirror('rooms');
    seen = [];
    sut.onChange((changes) => seen.push([...changes]));
  });

  it('keeps a snapshot and reports every key and variable it brought', () => {
    sut.merge({ lobby: { last_message_counter: 3, last_seen_counter: 1 }, empty: {} });
    expect(sut.keys()).toEqual(['lobby', 'empty']);
    expect(sut.get('lobby')).toEqual({ last_message_counter: 3, last_seen_counter: 1 });
    expect(sut.get('empty')).toEqual({});
    expect(sut.get('nope')).toBeUndefined();
    expect(seen).toEqual([
      [
        { key: 'lobby', variables: ['last_message_counter', 'last_seen_counter'] },
        { key: 'empty', variables: [] },
      ],
    ]);
  });

  it.each([
    ['a counter keeps its max', { c_counter: 5 }, { c_counter: 3 }, { c_counter: 5 }, false],
    ['a counter grows', { c_counter: 5 }, { c_counter: 6 }, { c_counter: 6 }, true],
    ['a set is a union, sorted', { s_set: ['b'] }, { s_set: ['a', 'b'] }, { s_set: ['a', 'b'] }, true],
    ['a set never shrinks', { s_set: ['a', 'b'] }, { s_set: ['a'] }, { s_set: ['a', 'b'] }, false],
    ['a newer register wins', { r_register: [1, 'x'] }, { r_register: [2, 'y'] }, { r_register: [2, 'y'] }, true],
    ['an older register loses', { r_register: [2, 'y'] }, { r_register: [1, 'x'] }, { r_register: [2, 'y'] }, false],
    [
      'equal versions: the greater canonical JSON wins',
      { r_register: [1, 'a'] },
      { r_register: [1, 'b'] },
      { r_register: [1, 'b'] },
      true,
    ],
  ])('merges like the gateway: %s', (_name, first, second, expected, isChange) => {
    sut.merge({ k: first });
    seen = [];
    sut.merge({ k: second });
    expect(sut.get('k')).toEqual(expected);
    expect(seen.length).toBe(isChange ? 1 : 0);
  });

  it('is idempotent: the same snapshot twice changes nothing the second time', () => {
    const snapshot = { lobby: { last_message_counter: 3, tags_set: ['x'], topic_register: [5, { t: 'hi' }] } };
    expect(sut.merge(snapshot)).toHaveLength(1);
    expect(sut.merge(snapshot)).toEqual([]);
    expect(seen).toHaveLength(1);
  });

  it('names only the variables that changed', () => {
    sut.merge({ lobby: { a_counter: 1, b_counter: 1 } });
    expect(sut.merge({ lobby: { a_counter: 1, b_counter: 2 }, other: { c_counter: 0 } })).toEqual([
      { key: 'lobby', variables: ['b_counter'] },
      { key: 'other', variables: ['c_counter'] },
    ]);
  });

  it('skips variables the gateway would refuse', () => {
    sut.merge({ k: { bad: 1, neg_counter: -1, s_set: [1], ok_counter: 2 } });
    expect(sut.get('k')).toEqual({ ok_counter: 2 });
  });

  it('reads counters with 0 for what is missing', () => {
    sut.merge({ k: { n_counter: 4 } });
    expect([sut.counter('k', 'n_counter'), sut.counter('k', 'm_counter'), sut.counter('x', 'n_counter')]).toEqual([
      4, 0, 0,
    ]);
  });

  it('stops calling a listener once removed', () => {
    const calls: number[] = [];
    const remove = sut.onChange(() => calls.push(1));
    sut.merge({ a: {} });
    remove();
    sut.merge({ b: {} });
    expect(calls).toEqual([1]);
  });
});

describe(`${LatticeMirror.name} convergence`, () => {
  const frame = fc.dictionary(
    fc.constantFrom('lobby', 'kitchen', 'x'),
    fc.record(
      {
        n_counter: fc.nat(50),
        tags_set: fc.array(fc.constantFrom('a', 'b', 'c'), { maxLength: 3 }),
        topic_register: fc.tuple(fc.nat(5), fc.oneof(fc.string({ maxLength: 2 }), fc.nat(3), fc.constant(null))),
      },
      { requiredKeys: [] },
    ),
  );

  function stateOf(mirror: LatticeMirror): unknown {
    return Object.fromEntries(
      mirror
        .keys()
        .sort()
        .map((key) => [key, mirror.get(key)]),
    );
  }

  it('ends in one state whatever the order and repetition of the frames (snapshots after a reconnect included)', () => {
    fc.assert(
      fc.property(fc.array(frame, { maxLength: 8 }), fc.func(fc.nat()), (frames, order) => {
        const inOrder = new LatticeMirror('n');
        for (const data of frames) inOrder.merge(data);
        const shuffled = new LatticeMirror('n');
        const permuted = frames.map((data, i) => ({ data, rank: order(i) })).sort((a, b) => a.rank - b.rank);
        for (const { data } of [...permuted, ...permuted.slice(0, 2)]) shuffled.merge(data);
        expect(stateOf(shuffled)).toEqual(stateOf(inOrder));
      }),
    );
  });
});
