import { HistoryLimits, TopicHistory } from './topic-history';

const frame = (n: number): Buffer => Buffer.from(String(n));
const UNBOUNDED: HistoryLimits = { size: 10, ttlMs: 1000, topicMaxBytes: 1 << 30, memoryMaxBytes: 1 << 30 };

function history(limits: Partial<HistoryLimits> = {}): TopicHistory {
  return new TopicHistory({ ...UNBOUNDED, ...limits });
}

function filled(size: number, count: number, topic = 't'): TopicHistory {
  const sut = history({ size });
  for (let n = 1; n <= count; n++) {
    sut.next(topic, 0);
    sut.keep(topic, frame(n), 1);
  }
  return sut;
}

/** Publish a frame of `bytes` bytes, all of them payload, to `topic`. */
function publish(sut: TopicHistory, topic: string, bytes: number): Buffer {
  sut.next(topic, 0);
  const kept = Buffer.alloc(bytes, topic);
  sut.keep(topic, kept, bytes);
  return kept;
}

describe(TopicHistory.name, () => {
  it('numbers a topic 1, 2, 3 under one epoch; another topic has its own', () => {
    const sut = history();
    const a = [sut.next('a', 0), sut.next('a', 0), sut.next('b', 0)];
    expect(a.map((p) => p.offset)).toEqual([1, 2, 1]);
    expect(a[0].epoch).toBe(a[1].epoch);
    expect(a[2].epoch).not.toBe(a[0].epoch);
  });

  it('replays what came after a position, oldest first', () => {
    const sut = filled(10, 5);
    const { epoch } = sut.position('t');
    expect(sut.replayAfter('t', { offset: 2, epoch })).toEqual({
      isLost: false,
      frames: [frame(3), frame(4), frame(5)],
    });
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
    expect(sut.replayAfter('t', { offset: 3, epoch })).toEqual({
      isLost: false,
      frames: [frame(4), frame(5), frame(6)],
    });
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
    expect(history({ size: 3 }).replayAfter('t', { offset: 4, epoch: 'e' })).toEqual({ isLost: false, frames: [] });
  });

  it('drops a history TTL after its last publish; a later publish starts a new epoch at 1', () => {
    const sut = history({ size: 3 });
    const first = sut.next('t', 0);
    sut.keep('t', frame(1), 1);
    sut.sweep(999);
    expect(sut.position('t')).toEqual({ offset: 1, epoch: first.epoch });
    sut.sweep(1000);
    expect(sut.position('t')).toEqual({ offset: 0, epoch: null });
    expect(sut.messageCount).toBe(0);
    const second = sut.next('t', 2000);
    expect(second.offset).toBe(1);
    expect(second.epoch).not.toBe(first.epoch);
  });

  describe('bytes (TOPIC_HISTORY_MAX_BYTES, HISTORY_MEMORY_MAX_BYTES)', () => {
    it("keeps a topic's payload at the bound exactly, and drops its oldest beyond it: missing those is lost", () => {
      const sut = history({ topicMaxBytes: 1000 });
      const first = publish(sut, 't', 500);
      const second = publish(sut, 't', 500);
      const { epoch } = sut.position('t');
      expect(sut.replayAfter('t', { offset: 0, epoch })).toEqual({ isLost: false, frames: [first, second] });
      const third = publish(sut, 't', 1);
      expect(sut.replayAfter('t', { offset: 1, epoch })).toEqual({ isLost: false, frames: [second, third] });
      expect(sut.replayAfter('t', { offset: 0, epoch })).toEqual({ isLost: true });
      expect([sut.messageCount, sut.byteCount]).toEqual([2, 501]);
    });

    it('counts payload bytes only against the topic bound, not the frame head', () => {
      const sut = history({ topicMaxBytes: 10 });
      sut.next('t', 0);
      sut.keep('t', Buffer.alloc(60), 10);
      expect(sut.messageCount).toBe(1);
    });

    it('keeps nothing of a payload over the topic bound: a resume that missed it is lost', () => {
      const sut = history({ topicMaxBytes: 100 });
      publish(sut, 't', 10);
      publish(sut, 't', 101);
      const { epoch } = sut.position('t');
      expect(sut.replayAfter('t', { offset: 1, epoch })).toEqual({ isLost: true });
      expect(sut.replayAfter('t', { offset: 2, epoch })).toEqual({ isLost: false, frames: [] });
      expect([sut.messageCount, sut.byteCount]).toEqual([0, 0]);
    });

    it('over the memory bound, drops the oldest frames of the largest history first, down to 15/16 of it', () => {
      const sut = history({ memoryMaxBytes: 1600 });
      for (let n = 0; n < 6; n++) publish(sut, 'big', 200); // 1200
      for (let n = 0; n < 2; n++) publish(sut, 'mid', 150); // 300
      publish(sut, 'small', 100); // 1600 in all: at the bound, nothing dropped
      expect([sut.messageCount, sut.byteCount]).toEqual([9, 1600]);
      publish(sut, 'small', 100); // 1700: trimmed to 1500 or less
      expect(sut.byteCount).toBe(1500);
      // big lost its oldest frame; mid and small kept everything.
      expect(sut.replayAfter('big', { offset: 0, epoch: null })).toEqual({ isLost: true });
      expect(sut.replayAfter('big', { offset: 1, epoch: null })).toMatchObject({ isLost: false });
      expect(sut.replayAfter('mid', { offset: 0, epoch: null })).toMatchObject({ isLost: false });
      expect(sut.replayAfter('small', { offset: 0, epoch: null })).toMatchObject({ isLost: false });
    });

    it('levels the largest histories down together', () => {
      const sut = history({ memoryMaxBytes: 3200 });
      for (let n = 0; n < 8; n++) publish(sut, 'a', 200); // 1600
      for (let n = 0; n < 10; n++) publish(sut, 'b', 130); // 1300
      publish(sut, 'c', 300); // 3200
      publish(sut, 'c', 600); // 3800: to 3000 or less: a 1400, 1200, b 1170, a 1000, b 1040
      expect(sut.byteCount).toBe(2940);
      const keptFrom = (topic: string, last: number) =>
        [0, 1, 2, 3, 4].find((offset) => !sut.replayAfter(topic, { offset, epoch: null }).isLost && offset < last);
      expect([keptFrom('a', 8), keptFrom('b', 10), keptFrom('c', 2)]).toEqual([3, 2, 0]);
    });

    it('forgets the bytes of a history the TTL dropped', () => {
      const sut = history({ ttlMs: 100 });
      publish(sut, 't', 300);
      sut.sweep(100);
      expect([sut.messageCount, sut.byteCount]).toEqual([0, 0]);
    });
  });
});
