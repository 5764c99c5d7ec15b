import { UserPresence, UsersMirror } from './users-mirror';

describe(UsersMirror.name, () => {
  let sut: UsersMirror;
  let seen: UserPresence[][];

  beforeEach(() => {
    sut = new UsersMirror();
    seen = [];
    sut.onChange((changes) => seen.push([...changes]));
  });

  it('lists statuses sorted by user id', () => {
    sut.lattice.merge({ bob: { status_register: [0, 'offline'] }, alice: { status_register: [10, 'active'] } });
    expect(sut.list()).toEqual([
      { userId: 'alice', status: 'active', sinceMs: 10 },
      { userId: 'bob', status: 'offline', sinceMs: 0 },
    ]);
    expect([sut.status('alice'), sut.status('bob'), sut.status('carol')]).toEqual(['active', 'offline', undefined]);
  });

  it('never lets an older status win (a late snapshot after a reconnect)', () => {
    sut.lattice.merge({ bob: { status_register: [20, 'offline'] } });
    sut.lattice.merge({ bob: { status_register: [10, 'active'] } });
    expect(sut.status('bob')).toBe('offline');
    expect(seen).toEqual([[{ userId: 'bob', status: 'offline', sinceMs: 20 }]]);
  });

  it('reports each change with the new status', () => {
    sut.lattice.merge({ bob: { status_register: [1, 'active'] } });
    sut.lattice.merge({ bob: { status_register: [2, 'inactive'] }, carol: { status_register: [0, 'offline'] } });
    expect(seen[1]).toEqual([
      { userId: 'bob', status: 'inactive', sinceMs: 2 },
      { userId: 'carol', status: 'offline', sinceMs: 0 },
    ]);
  });

  it('ignores a status it does not know', () => {
    sut.lattice.merge({ bob: { status_register: [1, 'dancing'] } });
    expect([sut.status('bob'), sut.list(), seen]).toEqual([undefined, [], []]);
  });
});
