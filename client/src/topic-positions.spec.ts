import { TopicPositions } from './topic-positions';

describe(TopicPositions.name, () => {
  it.each([
    ['the first message of a topic', [], [1, 'E'], true, [1, 'E']],
    ['the next offset', [[1, 'E']], [2, 'E'], true, [2, 'E']],
    ['a jump in offsets (what the history no longer held)', [[1, 'E']], [5, 'E'], true, [5, 'E']],
    ['a replayed message already received', [[3, 'E']], [2, 'E'], false, [3, 'E']],
    ['the same offset again', [[3, 'E']], [3, 'E'], false, [3, 'E']],
    ['another epoch with a lower offset: the history was lost, start afresh', [[9, 'E']], [1, 'F'], true, [1, 'F']],
    ['another epoch with the same offset', [[2, 'E']], [2, 'F'], true, [2, 'F']],
  ] as const)('%s', (_, before, [offset, epoch], isNew, after) => {
    const positions = new TopicPositions();
    for (const [o, e] of before) positions.advance('a.b', o, e);
    expect(positions.advance('a.b', offset, epoch)).toBe(isNew);
    expect(positions.mostRecentFirst()).toEqual([['a.b', ...after]]);
  });

  it('lists the topic that advanced last first; a dropped duplicate does not count as recent', () => {
    const positions = new TopicPositions();
    positions.advance('a', 1, 'E');
    positions.advance('b', 1, 'E');
    positions.advance('c', 1, 'E');
    positions.advance('a', 2, 'E');
    positions.advance('c', 1, 'E'); // a duplicate
    expect(positions.mostRecentFirst().map(([topic]) => topic)).toEqual(['a', 'c', 'b']);
    positions.clear();
    expect([positions.size, positions.mostRecentFirst()]).toEqual([0, []]);
  });
});
