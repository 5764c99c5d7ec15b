import { loadConfig } from './load-config';
import { BASE, problemsOf } from './load-config.fixtures';

/** REDIS_URL's forms, REDIS_SHARDS and a Redis Cluster (SPEC §13.2, §13.4, §13.5). */
describe(loadConfig.name, () => {
  describe('REDIS_URL forms (SPEC §13.2)', () => {
    it('takes a Sentinel URL as given', () => {
      const url = 'rediss+sentinel://gw:pw@s1.test:26379,s2.test:26379/prod?sentinel_password=spw';
      expect(loadConfig({ ...BASE, REDIS_URL: url }).redisUrl).toBe(url);
    });

    it('names the wrong part of a Sentinel URL on one line, without its secrets', () => {
      expect(problemsOf({ ...BASE, REDIS_URL: 'redis+sentinel://gw:hunter2@s1.test:26379,s2.test:0/prod' })).toEqual([
        'REDIS_URL: redis+sentinel:// URL: sentinel address "s2.test:0" is not host:port (a host name or IP address, [IPv6], port 1 to 65535)',
      ]);
      expect(problemsOf({ ...BASE, REDIS_URL: 'redis+sentinel://gw:hunter2@s1.test:26379' })).toEqual([
        'REDIS_URL: redis+sentinel:// URL: no master name (expected .../<master-name> after the sentinel addresses)',
      ]);
    });
  });

  describe('REDIS_SHARDS (SPEC §13.4)', () => {
    const control = 'redis://control.test:6379';

    it('reads the shards in order, whitespace-separated; unset: none', () => {
      const shards = 'redis://a.test:6379  rediss://:pw@b.test:6380\n redis+sentinel://s1.test:26379/c';
      expect(loadConfig({ ...BASE, REDIS_URL: control, REDIS_SHARDS: shards }).redisShards).toEqual([
        'redis://a.test:6379',
        'rediss://:pw@b.test:6380',
        'redis+sentinel://s1.test:26379/c',
      ]);
      expect(loadConfig({ ...BASE, REDIS_URL: control }).redisShards).toEqual([]);
    });

    it('names the bad shard by position, never its secrets', () => {
      const problems = problemsOf({
        ...BASE,
        REDIS_URL: control,
        REDIS_SHARDS: 'redis://a.test mysql://u:hunter2@b.test',
      });
      expect(problems).toHaveLength(1);
      expect(problems[0]).toMatch(/^REDIS_SHARDS: shard 2: /);
      expect(problems.join()).not.toContain('hunter2');
    });

    it('refuses an empty list, one Redis named twice, and shards without REDIS_URL', () => {
      expect(problemsOf({ ...BASE, REDIS_URL: control, REDIS_SHARDS: ' ' })).toEqual([
        'REDIS_SHARDS: lists no Redis URL (unset it to keep everything on REDIS_URL)',
      ]);
      expect(problemsOf({ ...BASE, REDIS_URL: control, REDIS_SHARDS: 'redis://a.test redis://a.test' })).toEqual([
        'REDIS_SHARDS: names one Redis twice',
      ]);
      expect(problemsOf({ ...BASE, REDIS_SHARDS: 'redis://a.test' })).toEqual([
        'REDIS_SHARDS: needs REDIS_URL (the control instance: node registry, liveness, node channels)',
      ]);
    });
  });

  describe('a Redis Cluster (SPEC §13.5)', () => {
    const cluster = 'redis+cluster://c1.test:7000,c2.test:7001';

    it('takes redis+cluster:// seeds as REDIS_URL', () => {
      expect(loadConfig({ ...BASE, REDIS_URL: cluster }).redisUrl).toBe(cluster);
    });

    it('refuses it with REDIS_SHARDS and as a shard', () => {
      expect(problemsOf({ ...BASE, REDIS_URL: cluster, REDIS_SHARDS: 'redis://a.test' })).toEqual([
        'REDIS_SHARDS: not with a Redis Cluster (REDIS_URL redis+cluster://): the cluster spreads the partitions over its primaries itself',
      ]);
      expect(problemsOf({ ...BASE, REDIS_URL: 'redis://a.test', REDIS_SHARDS: `redis://b.test ${cluster}` })).toEqual([
        'REDIS_SHARDS: shard 2: a Redis Cluster cannot be a shard (give it as REDIS_URL, without REDIS_SHARDS)',
      ]);
    });
  });
});
