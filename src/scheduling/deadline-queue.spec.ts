import fc from 'fast-check';
import { DeadlineQueue } from './deadline-queue';

describe(DeadlineQueue.name, () => {
  let sut: DeadlineQueue<string>;
  beforeEach(() => (sut = new DeadlineQueue<string>()));

  it('is empty at first', () => {
    expect([sut.size, sut.peekAt()]).toEqual([0, null]);
  });

  it('gives the earliest deadline first', () => {
    sut.push(30, 'c');
    sut.push(10, 'a');
    sut.push(20, 'b');
    expect(sut.peekAt()).toBe(10);
    expect(sut.popDue(20).map((e) => e.key)).toEqual(['a', 'b']);
    expect([sut.size, sut.peekAt()]).toEqual([1, 30]);
  });

  it('keeps entries not yet due', () => {
    sut.push(50, 'x');
    expect(sut.popDue(49)).toEqual([]);
    expect(sut.size).toBe(1);
  });

  it('peeks and pops one at a time', () => {
    sut.push(20, 'b');
    sut.push(10, 'a');
    expect(sut.peek()).toEqual({ atMs: 10, key: 'a' });
    expect(sut.pop()).toEqual({ atMs: 10, key: 'a' });
    expect(sut.pop()).toEqual({ atMs: 20, key: 'b' });
    expect(sut.pop()).toBeUndefined();
  });

  it('retains only accepted entries and stays ordered', () => {
    for (const [at, key] of [
      [5, 'x'],
      [1, 'drop'],
      [3, 'y'],
      [2, 'drop'],
      [4, 'z'],
    ] as const)
      sut.push(at, key);
    sut.retain((d) => d.key !== 'drop');
    expect(sut.popDue(10).map((d) => d.key)).toEqual(['y', 'z', 'x']);
  });

  it('pops any sequence of deadlines in sorted order', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 1000 })), (deadlines) => {
        const queue = new DeadlineQueue<number>();
        deadlines.forEach((at, i) => queue.push(at, i));
        const popped = queue.popDue(1000).map((e) => e.atMs);
        expect(popped).toEqual([...deadlines].sort((a, b) => a - b));
      }),
      { numRuns: 500 },
    );
  });
});
