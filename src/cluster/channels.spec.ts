import { keySlot, partitionTag } from './partition-tags';
import {
  ClusterNames,
  PARTITIONS,
  decodeChannelMessage,
  decodeNodeMessage,
  encodeAcks,
  encodeChannelMessage,
  encodeCommands,
  originHead,
  parseSessionMember,
  partitionOf,
  sessionMember,
} from './channels';

describe(partitionOf.name, () => {
  it('is stable, within range, and spreads names over the partitions', () => {
    const seen = new Set<number>();
    for (let i = 0; i < 5000; i++) {
      const p = partitionOf(`room/${i}`);
      expect(p).toBe(partitionOf(`room/${i}`));
      expect(Number.isInteger(p) && p >= 0 && p < PARTITIONS).toBe(true);
      seen.add(p);
    }
    expect(seen.size).toBe(PARTITIONS);
  });

  it.each([
    // FNV-1a 32 of "" is 0x811c9dc5 and of "a" 0xe40c292c (the reference values); mod 128.
    ['', 0xc5 % 128],
    ['a', 0x2c],
    ['room/1', 90],
  ])('gives %j the FNV-1a partition %i (fixed: nodes of different versions must agree)', (name, partition) => {
    expect(partitionOf(name)).toBe(partition);
  });
});

describe(ClusterNames.name, () => {
  const sut = new ClusterNames('acme:');

  it('puts the partition hash tag in channel and key names, under the prefix', () => {
    expect(sut.channel('t', 'room/1')).toBe('acme:t:{90-bb}:room/1');
    expect(sut.lattice('room/1')).toBe('acme:lat:{90-bb}:room/1');
    expect(sut.user('room/1')).toBe(sut.channel('u', 'room/1').replace(':t:', ':u:'));
    // A user's resumable sessions sit in the user's partition, beside its presence hash.
    expect(sut.userSessions('room/1')).toBe('acme:ru:{90-bb}:room/1');
    // The control keys and channels carry no partition tag (SPEC §13.3), but one control tag: one slot on a Redis Cluster.
    expect([sut.node('n1'), sut.everyNode, sut.alive('n1'), sut.nodes, sut.reaper('n1'), sut.shardList]).toEqual([
      'acme:{ctl}:n:n1',
      'acme:{ctl}:all',
      'acme:{ctl}:alive:n1',
      'acme:{ctl}:nodes',
      'acme:{ctl}:reap:n1',
      'acme:{ctl}:shards',
    ]);
    expect(new Set([sut.node('n1'), sut.queries, sut.queryAnswers('n2'), sut.nodes].map(keySlot)).size).toBe(1);
  });

  it("puts everything of a user's sessions and presence in the user's partition (SPEC §13.3)", () => {
    const p = partitionOf('ann');
    const tag = partitionTag(p);
    expect([
      sut.user('ann'),
      sut.userSessions('ann'),
      sut.session('ann', 'n1-c'),
      sut.sessionToken('ann', 'D'),
      sut.nodeUsers(p, 'n1'),
      sut.nodeSessions(p, 'n1'),
      sut.deadlines(p),
      sut.statusFloor(p),
      sut.orphanSessions(p),
      sut.endedTokens(p),
    ]).toEqual([
      `acme:u:{${tag}}:ann`,
      `acme:ru:{${tag}}:ann`,
      `acme:rs:{${tag}}:n1-c`,
      `acme:rt:{${tag}}:D`,
      `acme:nu:{${tag}}:n1`,
      `acme:rn:{${tag}}:n1`,
      `acme:dl:{${tag}}`,
      `acme:sv:{${tag}}`,
      `acme:ro:{${tag}}`,
      `acme:re:{${tag}}`,
    ]);
    // Keys named by a connection id alone sit in its partition.
    const c = partitionOf('n1-c');
    expect([sut.sessionUser('n1-c'), sut.resumeRate('n1-c')]).toEqual([
      `acme:ri:{${partitionTag(c)}}:n1-c`,
      `acme:rr:{${partitionTag(c)}}:n1-c`,
    ]);
  });

  it('round-trips a session member', () => {
    expect(parseSessionMember(sessionMember('n1-c', 'a|b'))).toEqual({ connectionId: 'n1-c', userId: 'a|b' });
  });
});

describe(encodeChannelMessage.name, () => {
  it('round-trips origin and payload without copying or decoding the payload', () => {
    const payload = Buffer.from('["message",{"topic":"a|b"},"x|y"]');
    const decoded = decodeChannelMessage(encodeChannelMessage(originHead('node_01'), payload));
    expect(decoded?.origin).toBe('node_01');
    expect(decoded?.payload.equals(payload)).toBe(true);
  });

  it.each([
    ['no separator', 'abc'],
    ['empty origin', '|payload'],
    ['separator beyond a node id', `${'n'.repeat(40)}|payload`],
  ])('ignores a message with %s', (_, text) => {
    expect(decodeChannelMessage(Buffer.from(text))).toBeNull();
  });
});

describe(decodeNodeMessage.name, () => {
  it('reads the commands and the acks it encodes', () => {
    const commands = [
      ['topic_subscribe', 'n1-abc', 'room', 7],
      ['users_add', 'alice', ['bob'], 8],
    ] as const;
    expect(decodeNodeMessage(encodeCommands('n2', commands))).toEqual({ f: 'n2', c: commands });
    expect(decodeNodeMessage(encodeAcks('n1', [7, 8]))).toEqual({ f: 'n1', a: [7, 8], e: [] });
    expect(decodeNodeMessage(encodeAcks('n1', [7, 8], [8]))).toEqual({ f: 'n1', a: [7, 8], e: [8] });
    // An earlier version's acks (no `e`) are all successes.
    expect(decodeNodeMessage('{"f":"n1","a":[7]}')).toEqual({ f: 'n1', a: [7], e: [] });
  });

  it.each([
    'probe',
    'null',
    '[]',
    '{"a":[1]}',
    '{"f":"n","a":["1"]}',
    '{"f":"n","c":[["x","y",1]]}',
    '{"f":"n","c":[[1,"y",null,1]]}',
  ])('ignores %s', (text) => {
    expect(decodeNodeMessage(text)).toBeNull();
  });
});
