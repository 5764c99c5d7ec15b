import fc from 'fast-check';
import { canonicalJson, mergeVariable, variableKind, type VariableValue } from './crdt';
import { parseLatticeBody, type LatticeBody } from './lattice-body';
import { LatticeStore, type LatticeDelta, type LatticeView } from './lattice-store';

const NS = 'chat/rooms';
const NOW = 1_000_000;

function body(raw: unknown): LatticeBody {
  const result = parseLatticeBody(raw);
  if (!result.ok) throw new Error(result.message);
  return result.value;
}

/** The delta as plain objects, for readable expectations. */
function plain(delta: LatticeDelta): unknown {
  const nested = <V>(map: ReadonlyMap<string, ReadonlyMap<string, V>>) =>
    Object.fromEntries([...map].map(([k, inner]) => [k, Object.fromEntries(inner)]));
  return {
    shared: nested(delta.shared),
    private: Object.fromEntries([...delta.private].map(([user, keys]) => [user, nested(keys)])),
    gained: Object.fromEntries([...delta.gained].map(([user, keys]) => [user, [...keys]])),
  };
}

/** What a client does with a delta frame: CRDT-merge each variable into its view. */
function applyToView(view: LatticeView, delta: LatticeView | null): LatticeView {
  const out = new Map(Object.entries(view).map(([key, vars]) => [key, new Map(Object.entries(vars))]));
  for (const [key, vars] of Object.entries(delta ?? {})) {
    const target = out.get(key) ?? new Map<string, VariableValue>();
    out.set(key, target);
    for (const [name, value] of Object.entries(vars)) {
      const kind = variableKind(name);
      if (kind === null) throw new Error(`bad name ${name}`);
      target.set(name, mergeVariable(kind, target.get(name), value).value);
    }
  }
  return Object.fromEntries([...out].map(([key, vars]) => [key, Object.fromEntries(vars)]));
}

function sortedView(view: LatticeView): string {
  return canonicalJson(JSON.parse(JSON.stringify(view)));
}

describe(LatticeStore.name, () => {
  let sut: LatticeStore;

  beforeEach(() => {
    sut = new LatticeStore();
  });

  describe('the swindon scenario', () => {
    const update = (shared: number, seen: number) =>
      sut.merge(
        NS,
        body({
          shared: { room: { last_message_counter: shared } },
          private: { u: { room: { last_seen_counter: seen } } },
        }),
        NOW,
      );

    beforeEach(() => update(100, 100));

    it('gives the user both counters in its snapshot', () => {
      expect(sut.snapshotFor(NS, 'u')).toEqual({ room: { last_message_counter: 100, last_seen_counter: 100 } });
    });

    it('reports both counters when both grow (101/102)', () => {
      const delta = update(101, 102);

      expect(plain(delta)).toEqual({
        shared: { room: { last_message_counter: 101 } },
        private: { u: { room: { last_seen_counter: 102 } } },
        gained: {},
      });
      expect(sut.visibleDeltaFor(NS, 'u', delta)).toEqual({
        room: { last_message_counter: 101, last_seen_counter: 102 },
      });
    });

    it('reports only the private counter when the shared one goes back (99/107)', () => {
      update(101, 102);
      const delta = update(99, 107);

      expect(plain(delta)).toEqual({ shared: {}, private: { u: { room: { last_seen_counter: 107 } } }, gained: {} });
      expect(sut.visibleDeltaFor(NS, 'u', delta)).toEqual({ room: { last_seen_counter: 107 } });
    });

    it('reports only the shared counter when the private one goes back (115/55)', () => {
      update(101, 102);
      update(99, 107);
      const delta = update(115, 55);

      expect(plain(delta)).toEqual({ shared: { room: { last_message_counter: 115 } }, private: {}, gained: {} });
      expect(sut.visibleDeltaFor(NS, 'u', delta)).toEqual({ room: { last_message_counter: 115 } });
      expect(sut.snapshotFor(NS, 'u')).toEqual({ room: { last_message_counter: 115, last_seen_counter: 107 } });
    });

    it('reports nothing when nothing grows', () => {
      const delta = update(100, 100);

      expect(plain(delta)).toEqual({ shared: {}, private: {}, gained: {} });
      expect(sut.visibleDeltaFor(NS, 'u', delta)).toBeNull();
    });
  });

  describe('access', () => {
    beforeEach(() => {
      sut.merge(NS, body({ shared: { k: { n_counter: 1, tags_set: ['a', 'b'] } }, private: { a: { k: {} } } }), NOW);
    });

    it('hides a shared key from a user without a private entry for it', () => {
      expect(sut.snapshotFor(NS, 'b')).toEqual({});
    });

    it('shows a key with only an empty private entry as its shared values', () => {
      expect(sut.snapshotFor(NS, 'a')).toEqual({ k: { n_counter: 1, tags_set: ['a', 'b'] } });
    });

    it('sends shared changes only to users who see the key', () => {
      const delta = sut.merge(NS, body({ shared: { k: { n_counter: 2 } } }), NOW);

      expect(sut.visibleDeltaFor(NS, 'a', delta)).toEqual({ k: { n_counter: 2 } });
      expect(sut.visibleDeltaFor(NS, 'b', delta)).toBeNull();
    });

    it('sends the full shared values of a key a user gains access to', () => {
      const delta = sut.merge(NS, body({ shared: { k: { tags_set: ['c'] } }, private: { b: { k: {} } } }), NOW);

      expect(plain(delta)).toMatchObject({ gained: { b: ['k'] } });
      expect(sut.visibleDeltaFor(NS, 'b', delta)).toEqual({ k: { n_counter: 1, tags_set: ['a', 'b', 'c'] } });
      expect(sut.visibleDeltaFor(NS, 'a', delta)).toEqual({ k: { tags_set: ['c'] } });
    });

    it('sends a gained key without variables as an empty object', () => {
      const delta = sut.merge(NS, body({ private: { b: { empty: {} } } }), NOW);

      expect(sut.visibleDeltaFor(NS, 'b', delta)).toEqual({ empty: {} });
      expect(sut.snapshotFor(NS, 'b')).toEqual({ empty: {} });
    });

    it('does not count an existing private entry as gained', () => {
      const delta = sut.merge(NS, body({ private: { a: { k: {} } } }), NOW);

      expect(delta.gained.size).toBe(0);
      expect(sut.visibleDeltaFor(NS, 'a', delta)).toBeNull();
    });

    it('never shows one user the private variables of another', () => {
      const delta = sut.merge(NS, body({ private: { a: { k: { mine_counter: 5 } }, b: { k: {} } } }), NOW);

      expect(sut.visibleDeltaFor(NS, 'b', delta)).toEqual({ k: { n_counter: 1, tags_set: ['a', 'b'] } });
      expect(sut.snapshotFor(NS, 'b')).toEqual({ k: { n_counter: 1, tags_set: ['a', 'b'] } });
    });

    it('shows nothing for an unknown namespace', () => {
      const delta = sut.merge(NS, body({ shared: { k: { n_counter: 9 } } }), NOW);

      expect(sut.snapshotFor('other', 'a')).toEqual({});
      expect(sut.visibleDeltaFor('other', 'a', delta)).toBeNull();
    });
  });

  it('puts only the added set elements in the delta', () => {
    sut.merge(NS, body({ shared: { k: { tags_set: ['b', 'a'] } }, private: { u: { k: {} } } }), NOW);
    const delta = sut.merge(NS, body({ shared: { k: { tags_set: ['a', 'd', 'c'] } } }), NOW);

    expect(sut.visibleDeltaFor(NS, 'u', delta)).toEqual({ k: { tags_set: ['c', 'd'] } });
    expect(sut.snapshotFor(NS, 'u')).toEqual({ k: { tags_set: ['a', 'b', 'c', 'd'] } });
  });

  it.each<[string, unknown, unknown]>([
    ['a higher version wins', [2, 'a'], [2, 'a']],
    ['a lower version loses', [0, 'z'], [1, 'm']],
    ['a tie goes to the greater canonical JSON', [1, 'z'], [1, 'z']],
    ['a tie with a smaller canonical JSON loses', [1, 'a'], [1, 'm']],
  ])('merges registers: %s', (_fact, incoming, stored) => {
    sut.merge(NS, body({ shared: { k: { title_register: [1, 'm'] } }, private: { u: { k: {} } } }), NOW);
    sut.merge(NS, body({ shared: { k: { title_register: incoming } } }), NOW);

    expect(sut.snapshotFor(NS, 'u')).toEqual({ k: { title_register: stored } });
  });

  it('lets a private variable override a shared one of the same name', () => {
    sut.merge(
      NS,
      body({ shared: { k: { x_counter: 10, y_counter: 1 } }, private: { u: { k: { x_counter: 3 } } } }),
      NOW,
    );
    const delta = sut.merge(NS, body({ shared: { k: { x_counter: 20, y_counter: 2 } } }), NOW);

    expect(sut.snapshotFor(NS, 'u')).toEqual({ k: { x_counter: 3, y_counter: 2 } });
    expect(sut.visibleDeltaFor(NS, 'u', delta)).toEqual({ k: { y_counter: 2 } });
  });

  describe('expiry', () => {
    const grant = (user: string, key: string, expiresIn: string, nowMs = NOW) =>
      sut.merge(NS, body({ private: { [user]: { [key]: { expires_in: expiresIn } } } }), nowMs);

    it('has no deadline when nothing expires', () => {
      sut.merge(NS, body({ private: { u: { k: {} } } }), NOW);

      expect(sut.nextExpiryAt()).toBeNull();
    });

    it('deletes the private entry once its deadline passes', () => {
      sut.merge(NS, body({ shared: { k: { n_counter: 1 } } }), NOW);
      grant('u', 'k', '10s');

      expect(sut.nextExpiryAt()).toBe(NOW + 10_000);
      sut.expire(NOW + 9_999);
      expect(sut.snapshotFor(NS, 'u')).toEqual({ k: { n_counter: 1 } });
      sut.expire(NOW + 10_000);
      expect(sut.snapshotFor(NS, 'u')).toEqual({});
      expect(sut.nextExpiryAt()).toBeNull();
    });

    it('replaces the deadline when expires_in comes again', () => {
      grant('u', 'k', '10s');
      grant('u', 'k', '1m', NOW + 5_000);

      expect(sut.nextExpiryAt()).toBe(NOW + 65_000);
      sut.expire(NOW + 10_000);
      expect(sut.snapshotFor(NS, 'u')).toEqual({ k: {} });
    });

    it('keeps the deadline when an update has no expires_in', () => {
      grant('u', 'k', '10s');
      sut.merge(NS, body({ private: { u: { k: { n_counter: 1 } } } }), NOW + 1);

      expect(sut.nextExpiryAt()).toBe(NOW + 10_000);
    });

    it('counts an entry re-created after expiry as gained again', () => {
      sut.merge(NS, body({ shared: { k: { n_counter: 4 } } }), NOW);
      grant('u', 'k', '1s');
      sut.expire(NOW + 1_000);
      const delta = sut.merge(NS, body({ private: { u: { k: {} } } }), NOW + 2_000);

      expect(sut.visibleDeltaFor(NS, 'u', delta)).toEqual({ k: { n_counter: 4 } });
    });

    it('expires many entries in deadline order, refreshed ones at their new deadline', () => {
      const seconds = [...Array(200).keys()].map((i) => ((i * 37) % 200) + 1);
      seconds.forEach((s, i) => grant(`u${i}`, 'k', `${s}s`));
      seconds.forEach((s, i) => i % 2 === 0 && grant(`u${i}`, 'k', `${s + 1000}s`));

      for (const step of [50, 150, 1100, 1300]) {
        sut.expire(NOW + step * 1000);
        const alive = seconds.filter((s, i) => (i % 2 === 0 ? s + 1000 : s) > step).length;
        const seen = seconds.filter((_s, i) => Object.keys(sut.snapshotFor(NS, `u${i}`)).length > 0).length;
        expect(seen).toBe(alive);
      }
      expect(sut.nextExpiryAt()).toBeNull();
    });

    it('forgets the deadlines of a dropped user', () => {
      grant('u', 'k', '10s');
      sut.dropUser(NS, 'u');

      expect(sut.nextExpiryAt()).toBeNull();
    });

    it('forgets the deadlines of a dropped namespace', () => {
      grant('u', 'k', '10s');
      sut.dropNamespace(NS);

      expect(sut.nextExpiryAt()).toBeNull();
    });
  });

  it('drops a user without touching the shared values', () => {
    sut.merge(NS, body({ shared: { k: { n_counter: 1 } }, private: { u: { k: { m_counter: 2 } } } }), NOW);
    sut.dropUser(NS, 'u');
    const delta = sut.merge(NS, body({ private: { u: { k: {} } } }), NOW);

    expect(sut.visibleDeltaFor(NS, 'u', delta)).toEqual({ k: { n_counter: 1 } });
  });

  it('counts namespaces as they are created and dropped', () => {
    sut.merge('a', body({}), NOW);
    sut.merge('b', body({}), NOW);
    sut.dropNamespace('a');

    expect(sut.namespaceCount).toBe(1);
    expect(sut.hasNamespace('a')).toBe(false);
    expect(sut.hasNamespace('b')).toBe(true);
  });

  it('turns every snapshot into the next one through the visible deltas', () => {
    const users = ['a', 'b', 'c'];
    const keys = ['k1', 'k2'];
    const sharedVars = fc.record(
      {
        s_counter: fc.nat(9),
        s_set: fc.array(fc.constantFrom('x', 'y', 'z')),
        s_register: fc.tuple(fc.nat(3), fc.constantFrom('p', 'q')),
      },
      { requiredKeys: [] },
    );
    const privateVars = fc.record(
      { p_counter: fc.nat(9), p_set: fc.array(fc.constantFrom('x', 'y')) },
      { requiredKeys: [] },
    );
    const rawBody = fc.record(
      {
        shared: fc.dictionary(fc.constantFrom(...keys), sharedVars),
        private: fc.dictionary(fc.constantFrom(...users), fc.dictionary(fc.constantFrom(...keys), privateVars)),
      },
      { requiredKeys: [] },
    );

    fc.assert(
      fc.property(fc.array(rawBody, { maxLength: 8 }), (bodies) => {
        const store = new LatticeStore();
        return bodies.every((raw) => {
          const before = users.map((user) => store.snapshotFor(NS, user));
          const delta = store.merge(NS, body(raw), NOW);
          return users.every((user, i) => {
            const visible = store.visibleDeltaFor(NS, user, delta);
            const after = sortedView(store.snapshotFor(NS, user));
            const unchanged = after === sortedView(before[i]);
            return sortedView(applyToView(before[i], visible)) === after && (visible === null) === unchanged;
          });
        });
      }),
      { numRuns: 500 },
    );
  });
});
