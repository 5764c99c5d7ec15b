import { ResumeWindowCounter } from './resume-window-counter';

/** A resume attempt at `nowMs`: refused (its wait) or let through and counted (0). */
function attempt(sut: ResumeWindowCounter, sessionId: string, nowMs: number): number {
  const waitMs = sut.waitMs(sessionId, nowMs);
  if (waitMs === 0) sut.hit(sessionId, nowMs);
  return waitMs;
}

describe(ResumeWindowCounter.name, () => {
  it('lets 10 resumes of a session through in 10 s, refuses the 11th with the time left', () => {
    const sut = new ResumeWindowCounter();
    for (let n = 0; n < 10; n++) expect(attempt(sut, 's', 1000 + n)).toBe(0);
    expect(attempt(sut, 's', 4000)).toBe(7000);
    expect(attempt(sut, 's', 10_999)).toBe(1);
  });

  it('opens a new window once the first is over', () => {
    const sut = new ResumeWindowCounter(2, 100);
    expect([attempt(sut, 's', 0), attempt(sut, 's', 1), attempt(sut, 's', 2)]).toEqual([0, 0, 98]);
    expect([attempt(sut, 's', 100), attempt(sut, 's', 150), attempt(sut, 's', 199)]).toEqual([0, 0, 1]);
  });

  it('counts each session apart', () => {
    const sut = new ResumeWindowCounter(1, 100);
    expect([attempt(sut, 'a', 0), attempt(sut, 'b', 0), attempt(sut, 'a', 1)]).toEqual([0, 0, 99]);
  });

  it('counts only what succeeded: checks alone (forged tokens naming the session) use nothing up', () => {
    const sut = new ResumeWindowCounter(2, 100);
    for (let n = 0; n < 50; n++) expect(sut.waitMs('s', n)).toBe(0);
    expect([attempt(sut, 's', 50), attempt(sut, 's', 51), attempt(sut, 's', 52)]).toEqual([0, 0, 98]);
  });

  it('forgets windows that are over', () => {
    const sut = new ResumeWindowCounter(1, 100);
    for (let n = 0; n < 50; n++) sut.hit(`s${n}`, n);
    sut.hit('late', 149);
    expect(sut.size).toBe(1);
  });
});
