import type { LoggedMessage } from './topic-log';
import { decodeLoggedMessage } from './topic-log';
import { TopicOrder } from './topic-order';

const m = (offset: number, epoch = 'E'): LoggedMessage => ({ offset, epoch, payload: Buffer.from(String(offset)) });
const offsets = (messages: readonly LoggedMessage[]): number[] => messages.map((message) => message.offset);

describe(TopicOrder.name, () => {
  it.each([
    ['ahead in the same epoch (Redis rolled back)', { offset: 3, epoch: 'E' }, true],
    ['level with it', { offset: 5, epoch: 'E' }, false],
    ['behind it (messages on their way)', { offset: 7, epoch: 'E' }, false],
    ['another epoch', { offset: 1, epoch: 'F' }, false],
  ])('isAhead of a history position: %s', (_, position, expected) => {
    const sut = new TopicOrder();
    sut.startAt('t', { offset: 4, epoch: 'E' });
    sut.arrive('t', m(5));
    expect(sut.isAhead('t', position)).toBe(expected);
    expect(sut.isAhead('other', position)).toBe(false);
  });

  it('a new epoch after a rollback starts the count again: offset 1 of it is delivered', () => {
    const sut = new TopicOrder();
    sut.startAt('t', { offset: 4, epoch: 'E' });
    expect(offsets(sut.arrive('t', m(5)).ready)).toEqual([5]);
    expect(offsets(sut.arrive('t', m(1, 'F')).ready)).toEqual([1]);
    expect(offsets(sut.arrive('t', m(2, 'F')).ready)).toEqual([2]);
  });

  it('delivers in order from where the node started; duplicates are dropped', () => {
    const sut = new TopicOrder();
    sut.startAt('t', { offset: 3, epoch: 'E' });
    expect(sut.arrive('t', m(4))).toEqual({ ready: [m(4)], fill: null });
    expect(sut.arrive('t', m(4))).toEqual({ ready: [], fill: null });
    expect(sut.arrive('t', m(2))).toEqual({ ready: [], fill: null });
  });

  it('a gap waits for one fill; the fill and the waiting messages then go in order', () => {
    const sut = new TopicOrder();
    sut.startAt('t', { offset: 1, epoch: 'E' });
    expect(sut.arrive('t', m(4))).toEqual({ ready: [], fill: { epoch: 'E', after: 1, before: 4 } });
    expect(sut.arrive('t', m(5))).toEqual({ ready: [], fill: null }); // one fill at a time
    const step = sut.filled('t', { epoch: 'E', after: 1, before: 4 }, [m(2), m(3)]);
    expect(offsets(step.ready)).toEqual([2, 3, 4, 5]);
    expect(step.fill).toBeNull();
  });

  it('a gap closed by pub/sub meanwhile: the fill adds nothing twice', () => {
    const sut = new TopicOrder();
    sut.startAt('t', { offset: 0, epoch: 'E' });
    const fill = sut.arrive('t', m(2)).fill!;
    expect(sut.isStillMissing('t', fill)).toBe(true);
    expect(offsets(sut.arrive('t', m(1)).ready)).toEqual([1, 2]);
    expect(sut.isStillMissing('t', fill)).toBe(false);
    expect(sut.filled('t', fill, [m(1)])).toEqual({ ready: [], fill: null });
  });

  it('skips what the history no longer holds, and fills the next gap after', () => {
    const sut = new TopicOrder();
    sut.startAt('t', { offset: 0, epoch: 'E' });
    const first = sut.arrive('t', m(3)).fill!;
    sut.arrive('t', m(6));
    const step = sut.filled('t', first, [m(2)]);
    expect(offsets(step.ready)).toEqual([2, 3]);
    expect(step.fill).toEqual({ epoch: 'E', after: 3, before: 6 });
    expect(offsets(sut.filled('t', step.fill!, []).ready)).toEqual([6]);
  });

  it('a new epoch starts the count again; a fill of the old epoch is ignored', () => {
    const sut = new TopicOrder();
    sut.startAt('t', { offset: 7, epoch: 'E' });
    const old = sut.arrive('t', m(9)).fill!;
    expect(offsets(sut.arrive('t', m(1, 'F')).ready)).toEqual([1]);
    expect(sut.filled('t', old, [m(8)])).toEqual({ ready: [], fill: null });
    expect(offsets(sut.arrive('t', m(2, 'F')).ready)).toEqual([2]);
  });

  it('a topic without history at the start takes the first epoch it sees; an unknown topic starts at its first message', () => {
    const sut = new TopicOrder();
    sut.startAt('t', { offset: 0, epoch: null });
    expect(offsets(sut.arrive('t', m(1, 'F')).ready)).toEqual([1]);
    expect(offsets(sut.arrive('u', m(5)).ready)).toEqual([5]);
    sut.forget('u');
    expect(sut.knows('u')).toBe(false);
  });
});

describe(decodeLoggedMessage.name, () => {
  it('reads `#<offset> <epoch> <payload>`, and nothing else', () => {
    expect(decodeLoggedMessage(Buffer.from('#12 aB_-9 {"a": "b c"}'))).toEqual({
      offset: 12,
      epoch: 'aB_-9',
      payload: Buffer.from('{"a": "b c"}'),
    });
    for (const text of ['["message",{"topic":"t"},1]', '#12', '#x E 1', '#0 E 1', '#1 E'])
      expect(decodeLoggedMessage(Buffer.from(text))).toBeNull();
  });
});

describe('TopicOrder.catchUp', () => {
  it('fills what the history got while this node was away; a new epoch counts from 0', () => {
    const sut = new TopicOrder();
    sut.startAt('t', { offset: 2, epoch: 'E' });
    expect(sut.catchUp('t', { offset: 2, epoch: 'E' })).toEqual({ ready: [], fill: null });
    const fill = sut.catchUp('t', { offset: 4, epoch: 'E' }).fill!;
    expect(fill).toEqual({ epoch: 'E', after: 2, before: 5 });
    expect(offsets(sut.filled('t', fill, [m(3), m(4)]).ready)).toEqual([3, 4]);
    expect(sut.catchUp('t', { offset: 1, epoch: 'F' }).fill).toEqual({ epoch: 'F', after: 0, before: 2 });
    expect([...sut.topics()]).toEqual(['t']);
  });
});
