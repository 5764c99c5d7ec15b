import { Connection } from '../connections/connection';
import { WALK_CHUNK, distinctUsers, nodeSlice, queryStateOf, sizeOf, usersOverNodes } from './node-answers';

describe(queryStateOf.name, () => {
  it.each([
    ['ready', 'attached'],
    ['pending', 'connecting'],
    ['detached', 'detached'],
    ['closed', null],
  ] as const)('%s → %s', (state, expected) => expect(queryStateOf(state)).toBe(expected));
});

describe(sizeOf.name, () => {
  it('reads a Set, an array or any iterable', () => {
    expect(sizeOf(new Set([1, 2]))).toBe(2);
    expect(sizeOf([1, 2, 3])).toBe(3);
    expect(sizeOf(new Map([[1, 1]]).keys())).toBe(1);
  });
});

describe(nodeSlice.name, () => {
  it("maps the node's part of the page", () => {
    const slice = nodeSlice('b', [1, 2, 3], 3, { from: { node: 'b', offset: 1 }, limit: 5 }, (n) => n * 10);
    expect(slice).toEqual({ count: 3, start: 1, items: [20, 30] });
  });
});

describe(usersOverNodes.name, () => {
  it.each([
    ['one node: its count', [{ users: 5, userIds: null }], 5],
    [
      'every node sent ids: each user once',
      [
        { users: 2, userIds: ['a', 'b'] },
        { users: 2, userIds: ['b', 'c'] },
      ],
      3,
    ],
    [
      'a node sent a count only: the sum',
      [
        { users: 2, userIds: ['a', 'b'] },
        { users: 20_000, userIds: null },
      ],
      20_002,
    ],
  ])('%s', (_, parts, expected) => expect(usersOverNodes(parts)).toBe(expected));
});

describe(distinctUsers.name, () => {
  it('counts each user once, skips connections not yet authorized, and yields between chunks', async () => {
    const subscribers = Array.from(
      { length: WALK_CHUNK * 2 + 3 },
      (_, i) => ({ userId: i % 7 === 0 ? null : `u${i % 100}` }) as unknown as Connection,
    );
    let isLoopTurned = false;
    setImmediate(() => (isLoopTurned = true));
    const users = await distinctUsers(subscribers);
    expect(isLoopTurned).toBe(true);
    expect(users.size).toBe(new Set(subscribers.map((c) => c.userId).filter((u) => u !== null)).size);
  });
});
