import {
  DEFAULT_QUERY_LIMIT,
  NodeSlice,
  PageStart,
  encodeCursor,
  mergePage,
  parsePageParams,
  sliceOf,
  sliceStart,
} from './query-page';

describe(parsePageParams.name, () => {
  it.each<[unknown, unknown, number, PageStart]>([
    [undefined, undefined, DEFAULT_QUERY_LIMIT, null],
    ['1', undefined, 1, null],
    ['1000', undefined, 1000, null],
    ['0042', undefined, 42, null],
    ['5', encodeCursor('nodeA', 7), 5, { node: 'nodeA', offset: 7 }],
  ])('accepts limit %p cursor %p', (limit, cursor, expectedLimit, from) => {
    expect(parsePageParams(limit, cursor)).toEqual({ ok: true, limit: expectedLimit, from });
  });

  it.each<[unknown, unknown, string]>([
    ['0', undefined, 'invalid_limit'],
    ['1001', undefined, 'invalid_limit'],
    ['-1', undefined, 'invalid_limit'],
    ['1.5', undefined, 'invalid_limit'],
    ['', undefined, 'invalid_limit'],
    [' 5', undefined, 'invalid_limit'],
    ['1e3', undefined, 'invalid_limit'],
    [['1', '2'], undefined, 'invalid_limit'],
    [undefined, '', 'invalid_cursor'],
    [undefined, 'not-a-cursor', 'invalid_cursor'],
    [undefined, ['a', 'b'], 'invalid_cursor'],
    [undefined, Buffer.from('["nodeA",-1]').toString('base64url'), 'invalid_cursor'],
    [undefined, Buffer.from('["nodeA",1.5]').toString('base64url'), 'invalid_cursor'],
    [undefined, Buffer.from('["no de",1]').toString('base64url'), 'invalid_cursor'],
    [undefined, Buffer.from('{"node":"a"}').toString('base64url'), 'invalid_cursor'],
    [undefined, 'x'.repeat(300), 'invalid_cursor'],
  ])('refuses limit %p cursor %p', (limit, cursor, error) => {
    expect(parsePageParams(limit, cursor)).toMatchObject({ ok: false, error, message: expect.any(String) });
  });
});

describe(sliceStart.name, () => {
  it.each<[string, PageStart, number]>([
    ['b', null, 0],
    ['b', { node: 'a', offset: 3 }, 0],
    ['b', { node: 'b', offset: 3 }, 3],
    ['b', { node: 'b', offset: 99 }, 10],
    ['b', { node: 'c', offset: 0 }, 10],
  ])('node %p, page from %p → %p', (node, from, start) => {
    expect(sliceStart(node, 10, from)).toBe(start);
  });
});

describe(sliceOf.name, () => {
  it('takes up to limit items from start', () => {
    expect(sliceOf(new Set([1, 2, 3, 4, 5]), 5, 1, 2)).toEqual({ count: 5, start: 1, items: [2, 3] });
    expect(sliceOf([1, 2], 2, 2, 5)).toEqual({ count: 2, start: 2, items: [] });
  });
});

describe(mergePage.name, () => {
  /** The node slices of every node for a page from `from`, as each node would answer. */
  const slicesOf = (lists: Record<string, number[]>, from: PageStart, limit: number) =>
    Object.entries(lists).map(([node, list]): [string, NodeSlice<number>] => [
      node,
      sliceOf(list, list.length, sliceStart(node, list.length, from), limit),
    ]);

  it.each<[string, Record<string, number[]>, number]>([
    ['one node', { a: [1, 2, 3, 4, 5] }, 2],
    ['nodes given out of order', { c: [7], a: [1, 2], b: [3, 4, 5, 6] }, 3],
    ['a page ending at a node end', { a: [1, 2], b: [3, 4] }, 2],
    ['empty nodes between', { a: [1], b: [], c: [2, 3] }, 1],
    ['nothing anywhere', { a: [], b: [] }, 10],
    ['one exact page', { a: [1, 2, 3] }, 3],
  ])('walks %s, every item once, no empty last page', (_, lists, limit) => {
    const all = Object.keys(lists)
      .sort()
      .flatMap((node) => lists[node]);
    const seen: number[] = [];
    let from: PageStart = null;
    for (let pages = 0; pages < 20; pages++) {
      const page = mergePage(slicesOf(lists, from, limit), limit);
      seen.push(...page.items);
      if (page.cursor === null) break;
      expect(page.items.length).toBe(limit);
      const params = parsePageParams(String(limit), page.cursor);
      if (!params.ok) throw new Error('cursor refused');
      from = params.from;
    }
    expect(seen).toEqual(all);
  });
});
