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
});
