import { TopicHistory } from './topic-history';

const frame = (n: number): Buffer => Buffer.from(String(n));

function filled(size: number, count: number, topic = 't'): TopicHistory {
  const sut = new TopicHistory(size, 1000);
  for (let n = 1; n <= count; n++) {
    sut.next(topic, 0);
    sut.keep(topic, frame(n));
  }
  return sut;
}

describe(TopicHistory.name, () => {
  it('numbers a topic 1, 2, 3 under one epoch; another topic has its own', () => {
    const sut = new TopicHistory(10, 1000);
    const a = [sut.next('a', 0), sut.next('a', 0), sut.next('b', 0)];
    expect(a.map((p) => p.offset)).toEqual([1, 2, 1]);
    expect(a[0].epoch).toBe(a[1].epoch);
    expect(a[2].epoch).not.toBe(a[0].epoch);
  });

  it('replays what came after a position, oldest first', () => {
    const sut = filled(10, 5);
    const { epoch } = sut.position('t');
    expect(sut.replayAfter('t', { offset: 2, epoch })).toEqual({ isLost: false, frames: [frame(3), frame(4), frame(5)] });
    expect(sut.replayAfter('t', { offset: 5, epoch })).toEqual({ isLost: false, frames: [] });
    expect(sut.replayAfter('t', { offset: 9, epoch })).toEqual({ isLost: false, frames: [] });
  });

  it('replays everything from offset 0 of a history begun after the position was taken', () => {
    const sut = filled(10, 2);
    expect(sut.replayAfter('t', { offset: 0, epoch: null })).toEqual({ isLost: false, frames: [frame(1), frame(2)] });
  });

  it('keeps the last `size` frames; a position before them is lost, never partly replayed', () => {
    const sut = filled(3, 6);
    const { epoch } = sut.position('t');
    expect(sut.messageCount).toBe(3);
    expect(sut.replayAfter('t', { offset: 3, epoch })).toEqual({ isLost: false, frames: [frame(4), frame(5), frame(6)] });
    expect(sut.replayAfter('t', { offset: 2, epoch })).toEqual({ isLost: true });
  });

  it('a position of another epoch is lost', () => {
    const sut = filled(3, 1);
    expect(sut.replayAfter('t', { offset: 0, epoch: 'other' })).toEqual({ isLost: true });
  });

  it('size 0 keeps no frame but counts offsets: anything missed is lost', () => {
    const sut = filled(0, 2);
    const { epoch } = sut.position('t');
    expect(sut.messageCount).toBe(0);
    expect(sut.position('t').offset).toBe(2);
    expect(sut.replayAfter('t', { offset: 1, epoch })).toEqual({ isLost: true });
    expect(sut.replayAfter('t', { offset: 2, epoch })).toEqual({ isLost: false, frames: [] });
  });

  it('a topic without history has nothing to replay', () => {
    expect(new TopicHistory(3, 1000).replayAfter('t', { offset: 4, epoch: 'e' })).toEqual({ isLost: false, frames: [] });
  });

  it('drops a history TTL after its last publish; a later publish starts a new epoch at 1', () => {
    const sut = new TopicHistory(3, 1000);
    const first = sut.next('t', 0);
    sut.keep('t', frame(1));
    sut.sweep(999);
    expect(sut.position('t')).toEqual({ offset: 1, epoch: first.epoch });
    sut.sweep(1000);
    expect(sut.position('t')).toEqual({ offset: 0, epoch: null });
    expect(sut.messageCount).toBe(0);
    const second = sut.next('t', 2000);
    expect(second.offset).toBe(1);
    expect(second.epoch).not.toBe(first.epoch);
  });
});
