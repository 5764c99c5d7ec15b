import { newConnectionId, nodeOfConnectionId } from './connection-id';

const NODE_IDS = ['node', 'node_1', 'A1b2C3d4', 'n'.repeat(32), 'abcd_efgh_ijkl_mnop_qrst_uvwx_yz'];

describe(newConnectionId.name, () => {
  it.each(NODE_IDS)('uses only [A-Za-z0-9_-] and at most 64 chars for node %p', (nodeId) => {
    for (let i = 0; i < 100; i++) expect(newConnectionId(nodeId)).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
  });

  it.each(NODE_IDS)('lets node %p be recovered from its ids', (nodeId) => {
    for (let i = 0; i < 100; i++) expect(nodeOfConnectionId(newConnectionId(nodeId))).toBe(nodeId);
  });

  it('appends 22 base64url chars (128 bits) after the node id and a dash', () => {
    expect(newConnectionId('node')).toMatch(/^node-[A-Za-z0-9_-]{22}$/);
  });

  it('is 55 chars for the longest node id', () => {
    expect(newConnectionId('n'.repeat(32))).toHaveLength(55);
  });

  it('never repeats over 10,000 ids', () => {
    const ids = new Set(Array.from({ length: 10_000 }, () => newConnectionId('node')));
    expect(ids.size).toBe(10_000);
  });
});

describe(nodeOfConnectionId.name, () => {
  it.each([
    ['node-abc', 'node'],
    ['node--abc', 'node'],
    ['node-a-b_c', 'node'],
    ['node-', 'node'],
    ['nodeonly', null],
    ['-abc', null],
    ['', null],
  ])('reads the owner of %p as %p', (cid, node) => {
    expect(nodeOfConnectionId(cid)).toBe(node);
  });
});
