import { TopicIndex } from './topic-index';

describe(TopicIndex.name, () => {
  let sut: TopicIndex<string>;
  beforeEach(() => (sut = new TopicIndex<string>()));

  it('indexes a subscription both ways', () => {
    expect(sut.add('a/b', 'c1')).toBe(true);
    expect([...sut.subscribersOf('a/b')!]).toEqual(['c1']);
    expect([...sut.topicsOf('c1')!]).toEqual(['a/b']);
    expect(sut.topicCount).toBe(1);
    expect(sut.subscriberCount('a/b')).toBe(1);
    expect(sut.hasSubscribers('a/b')).toBe(true);
  });

  it('reports a repeated subscription as not new', () => {
    sut.add('t', 'c1');
    expect(sut.add('t', 'c1')).toBe(false);
  });

  it('drops a topic with its last subscriber', () => {
    sut.add('t', 'c1');
    expect(sut.remove('t', 'c1')).toBe(true);
    expect(sut.subscribersOf('t')).toBeUndefined();
    expect(sut.hasSubscribers('t')).toBe(false);
    expect(sut.subscriberCount('t')).toBe(0);
    expect(sut.topicsOf('c1')).toBeUndefined();
    expect(sut.topicCount).toBe(0);
  });

  it('ignores removing what is not there', () => {
    expect(sut.remove('t', 'c1')).toBe(false);
  });

  it('removes every subscription of a subscriber and keeps the others', () => {
    sut.add('t1', 'c1');
    sut.add('t2', 'c1');
    sut.add('t2', 'c2');
    expect(sut.removeSubscriber('c1').sort()).toEqual(['t1', 't2']);
    expect(sut.subscribersOf('t1')).toBeUndefined();
    expect([...sut.subscribersOf('t2')!]).toEqual(['c2']);
    expect(sut.removeSubscriber('c1')).toEqual([]);
  });

  it("lists a subscriber's topics in the order subscribed, through one, two, three topics and back", () => {
    sut.add('t1', 'c1');
    expect([...sut.topicsOf('c1')!]).toEqual(['t1']);
    sut.add('t2', 'c1');
    sut.add('t3', 'c1');
    expect([...sut.topicsOf('c1')!]).toEqual(['t1', 't2', 't3']);
    sut.remove('t2', 'c1');
    expect([...sut.topicsOf('c1')!]).toEqual(['t1', 't3']);
    sut.remove('t1', 'c1');
    expect([...sut.topicsOf('c1')!]).toEqual(['t3']);
    sut.add('t4', 'c1');
    expect([...sut.topicsOf('c1')!]).toEqual(['t3', 't4']);
    expect(sut.removeSubscriber('c1')).toEqual(['t3', 't4']);
    expect(sut.topicsOf('c1')).toBeUndefined();
    expect(sut.topicCount).toBe(0);
  });

  it("keeps a single-topic subscriber's subscription through a repeated subscribe", () => {
    sut.add('t', 'c1');
    expect(sut.add('t', 'c1')).toBe(false);
    expect(sut.remove('t', 'c1')).toBe(true);
    expect(sut.remove('t', 'c1')).toBe(false);
    expect(sut.topicsOf('c1')).toBeUndefined();
  });
});
