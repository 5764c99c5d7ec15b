import { ResumeWindowCounter } from './resume-window-counter';

describe(ResumeWindowCounter.name, () => {
  it('lets 10 resumes of a session through in 10 s, refuses the 11th with the time left', () => {
    const sut = new ResumeWindowCounter();
    for (let n = 0; n < 10; n++) expect(sut.hit('s', 1000 + n)).toBe(0);
    expect(sut.hit('s', 4000)).toBe(7000);
    expect(sut.hit('s', 10_999)).toBe(1);
  });

  it('opens a new window once the first is over', () => {
    const sut = new ResumeWindowCounter(2, 100);
    expect([sut.hit('s', 0), sut.hit('s', 1), sut.hit('s', 2)]).toEqual([0, 0, 98]);
    expect([sut.hit('s', 100), sut.hit('s', 150), sut.hit('s', 199)]).toEqual([0, 0, 1]);
  });

  it('counts each session apart', () => {
    const sut = new ResumeWindowCounter(1, 100);
    expect([sut.hit('a', 0), sut.hit('b', 0), sut.hit('a', 1)]).toEqual([0, 0, 99]);
  });

  it('forgets windows that are over', () => {
    const sut = new ResumeWindowCounter(1, 100);
    for (let n = 0; n < 50; n++) sut.hit(`s${n}`, n);
    sut.hit('late', 149);
    expect(sut.size).toBe(1);
  });
});
