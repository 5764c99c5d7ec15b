import { DetachedPerUser } from './detached-per-user';

describe(DetachedPerUser.name, () => {
  it('names the oldest detached session of a user once one more than the bound detaches', () => {
    const sut = new DetachedPerUser<string>(2);
    expect(sut.detached('u', 's1')).toBeNull();
    expect(sut.detached('u', 's2')).toBeNull();
    expect(sut.detached('u', 's3')).toBe('s1');
    sut.gone('u', 's1');
    expect(sut.detached('u', 's4')).toBe('s2');
  });

  it('counts each user apart', () => {
    const sut = new DetachedPerUser<string>(1);
    expect(sut.detached('u', 's1')).toBeNull();
    expect(sut.detached('v', 's2')).toBeNull();
    expect(sut.detached('v', 's3')).toBe('s2');
  });

  it('stops counting a session that resumed or ended, and ignores one it never saw', () => {
    const sut = new DetachedPerUser<string>(1);
    sut.detached('u', 's1');
    sut.gone('u', 's1');
    sut.gone('u', 'never');
    sut.gone('nobody', 's1');
    expect(sut.detached('u', 's2')).toBeNull();
  });

  it('a session detached twice counts once', () => {
    const sut = new DetachedPerUser<string>(1);
    sut.detached('u', 's1');
    expect(sut.detached('u', 's1')).toBeNull();
  });
});
