import { ResumablePositions } from './resumable-positions';

describe(ResumablePositions.name, () => {
  const a = { name: 'a' };
  const b = { name: 'b' };

  it('counts resumable subscribers per topic and remembers where each subscription began', () => {
    const sut = new ResumablePositions();
    sut.subscribed(a, 't', { offset: 3, epoch: 'e' });
    sut.subscribed(b, 't', { offset: 5, epoch: 'e' });
    expect(sut.hasSubscribers('t')).toBe(true);
    expect(sut.subscribedAt(a, 't')).toEqual({ offset: 3, epoch: 'e' });
    sut.unsubscribed(a, 't');
    expect(sut.subscribedAt(a, 't')).toEqual({ offset: 0, epoch: null });
    expect(sut.hasSubscribers('t')).toBe(true);
    sut.forgetSubscriber(b);
    expect(sut.hasSubscribers('t')).toBe(false);
  });

  it('ignores an unsubscribe it never saw', () => {
    const sut = new ResumablePositions();
    sut.subscribed(a, 't', { offset: 0, epoch: null });
    sut.unsubscribed(b, 't');
    sut.unsubscribed(a, 'other');
    expect(sut.hasSubscribers('t')).toBe(true);
  });

  it('keeps one topic without a Map and several with one, the same either way', () => {
    const sut = new ResumablePositions();
    sut.subscribed(a, 't1', { offset: 1, epoch: 'e' });
    sut.subscribed(a, 't1', { offset: 2, epoch: 'e' }); // again: counted once
    expect(sut.subscriberCount('t1')).toBe(1);
    sut.startsAt(a, 't1', { offset: 4, epoch: 'e' });
    sut.startsAt(a, 'never', { offset: 9, epoch: 'e' });
    sut.subscribed(a, 't2', { offset: 7, epoch: 'f' });
    sut.subscribed(a, 't2', { offset: 8, epoch: 'f' }); // again: counted once
    expect([sut.subscribedAt(a, 't1'), sut.subscribedAt(a, 't2'), sut.subscribedAt(a, 'never')]).toEqual([
      { offset: 4, epoch: 'e' },
      { offset: 8, epoch: 'f' },
      { offset: 0, epoch: null },
    ]);
    expect([sut.subscriberCount('t1'), sut.subscriberCount('t2'), sut.hasSubscribers('never')]).toEqual([1, 1, false]);
    sut.unsubscribed(a, 't1');
    sut.unsubscribed(a, 't2');
    expect([sut.hasSubscribers('t1'), sut.hasSubscribers('t2')]).toEqual([false, false]);
    sut.subscribed(a, 't3', { offset: 0, epoch: null });
    sut.startsAt(a, 't3', { offset: 5, epoch: 'g' });
    expect(sut.subscribedAt(a, 't3')).toEqual({ offset: 5, epoch: 'g' });
    sut.forgetSubscriber(a);
    expect(sut.hasSubscribers('t3')).toBe(false);
  });
});
