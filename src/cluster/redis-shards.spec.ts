import { GatewayMetrics } from '../metrics/gateway-metrics';
import { ClusterNames, EVERY_PARTITION, partitionOf } from './channels';
import { jumpHash } from './jump-hash';
import { RedisLink } from './redis-link';
import { RedisShards, partitionOfKey } from './redis-shards';

// Links that never connect (lazy): only their identity matters here.
const linkTo = (port: number) => new RedisLink(`redis://127.0.0.1:${port}`, new GatewayMetrics(), 'n1');

describe('RedisShards', () => {
  const names = new ClusterNames('acme:');
  const control = linkTo(1);
  const shards = [linkTo(2), linkTo(3), linkTo(4)];
  const sut = new RedisShards(control, shards);

  it('puts partition p on shard jumpHash(p, N), and every partition on REDIS_URL without shards', () => {
    for (const p of EVERY_PARTITION) expect(sut.of(p)).toBe(shards[jumpHash(p, 3)]);
    const alone = new RedisShards(control);
    expect(EVERY_PARTITION.every((p) => alone.of(p) === control)).toBe(true);
    expect(alone.all).toEqual([control]);
    expect(sut.all).toEqual([control, ...shards]);
  });

  it('finds the link of a key or channel by its tag, and control keys on REDIS_URL', () => {
    expect(sut.forKey(names.topicHistory('room/1'))).toBe(sut.of(partitionOf('room/1')));
    expect(sut.forKey(names.channel('u', 'ann'))).toBe(sut.ofName('ann'));
    expect(sut.forKey(names.deadlines(77))).toBe(sut.of(77));
    for (const key of [names.nodes, names.node('n1'), names.everyNode, names.alive('n1')])
      expect(sut.forKey(key)).toBe(control);
  });

  it('reads the partition of a key by its tag only', () => {
    expect(partitionOfKey('acme:th:{5-hd6}:a{b}')).toBe(5);
    expect(partitionOfKey('acme:nodes')).toBeNull();
    expect(partitionOfKey('acme:{ctl}:n:node-1')).toBeNull();
    expect(partitionOfKey('acme:{ctl}:n:{5-hd6}')).toBeNull(); // the first tag counts, as in Redis Cluster
    expect(partitionOfKey('acme:x:{999-a}:y')).toBeNull();
    expect(partitionOfKey('acme:x:{abc}:y')).toBeNull();
  });
});
