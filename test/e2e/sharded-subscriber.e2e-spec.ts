import { Cluster } from 'ioredis';
import { designedSlot, keySlot, partitionTag } from '../../src/cluster/partition-tags';
import { ShardedSubscriber } from '../../src/cluster/sharded-subscriber';
import { redisCall } from './harness/redis-server';
import { RedisCluster, startRedisCluster } from './harness/redis-topologies';
import { waitFor } from './harness/wait';

/**
 * {@link ShardedSubscriber} against a real three-primary Redis Cluster (SPEC
 * §13.5, issue 30): SPUBLISHes through an ioredis `Cluster` reach it on every
 * primary, delivery resumes after the channel's slot migrates (the case where
 * ioredis's own sharded subscribers stop for good, test/spikes/README.md),
 * and after its primary fails over to a replica, and an unsubscribed channel
 * gets nothing more. The migration runs with the periodic slot-map check off,
 * so only the pushed `sunsubscribe` can bring delivery back.
 */

/** How long after a slot migration delivery may take to come back (issue 30: resubscribed within 2 s). */
const RESUME_BOUND_MS = 2000;
/** After a failover (SPEC §13.5: followed within 10 s), counted from the replica's promotion. */
const FAILOVER_RESUME_BOUND_MS = 10_000;
/** A slot-map check period long enough never to fire during a test. */
const NO_SLOT_CHECK_MS = 600_000;

function channelOf(p: number, suffix = ''): string {
  return `gateway:t:{${partitionTag(p)}}:room/${p}${suffix}`;
}

/** What the subscriber delivered, in order. */
class Inbox {
  readonly messages: Array<{ channel: string; message: string; at: number }> = [];
  readonly resubscribed: string[][] = [];
  /** When onResubscribed was last called (epoch ms). */
  resubscribedAt = 0;

  constructor(sut: ShardedSubscriber) {
    sut.onMessage((channel, message) => this.messages.push({ channel, message: message.toString(), at: Date.now() }));
    sut.onResubscribed((channels) => {
      this.resubscribed.push(channels);
      this.resubscribedAt = Date.now();
    });
  }

  got(channel: string, message: string): boolean {
    return this.messages.some((m) => m.channel === channel && m.message === message);
  }

  of(channel: string): string[] {
    return this.messages.filter((m) => m.channel === channel).map((m) => m.message);
  }
}

/** A numbered SPUBLISH every 10 ms on one channel, remembering when each was sent. */
class PublishLoad {
  private seq = 0;
  private readonly timer: NodeJS.Timeout;
  readonly sentAt = new Map<string, number>();

  constructor(publisher: Cluster, channel: string) {
    this.timer = setInterval(() => {
      const message = String(this.seq++);
      this.sentAt.set(message, Date.now());
      publisher.spublish(channel, message).catch(() => undefined);
    }, 10);
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

/** Resolves the first message on `channel` published after `since`; rejects after `ms`. */
function firstPublishedAfter(
  inbox: Inbox,
  load: PublishLoad,
  channel: string,
  since: number,
  ms: number,
): Promise<{ at: number }> {
  return waitFor(
    () => inbox.messages.find((m) => m.channel === channel && (load.sentAt.get(m.message) ?? 0) > since),
    () => `a message on ${channel} published after the event; last received ${inbox.of(channel).slice(-1)}`,
    ms,
  );
}

function report(findings: Record<string, unknown>): void {
  process.stdout.write(`SHARDED ${JSON.stringify(findings)}\n`);
}

describe(ShardedSubscriber.name, () => {
  const closers: Array<() => unknown> = [];

  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  /** A started subscriber seeded with `seeds` and what it delivers; closed after the test. */
  async function startSubscriber(
    seeds: RedisCluster['seeds'],
    slotCheckMs?: number,
  ): Promise<{ sut: ShardedSubscriber; inbox: Inbox }> {
    const sut = new ShardedSubscriber(seeds, {}, slotCheckMs);
    const inbox = new Inbox(sut);
    closers.push(() => sut.close());
    await sut.start();
    return { sut, inbox };
  }

  function publishLoad(publisher: Cluster, channel: string): PublishLoad {
    const load = new PublishLoad(publisher, channel);
    closers.push(() => load.stop());
    return load;
  }

  describe('on three primaries', () => {
    let cluster: RedisCluster;
    let publisher: Cluster;

    beforeAll(async () => {
      cluster = await startRedisCluster(3);
      publisher = new Cluster(cluster.seeds, { redisOptions: { maxRetriesPerRequest: 2 } });
      publisher.on('error', () => undefined);
    }, 30_000);

    afterAll(async () => {
      publisher?.disconnect();
      await cluster?.stop();
    });

    /** One partition whose designed slot each primary serves. */
    async function onePartitionPerPrimary(): Promise<Map<number, number>> {
      const ranges = await cluster.slotRanges();
      const byPort = new Map<number, number>();
      for (let p = 0; p < 128; p++) {
        const range = ranges.find((r) => r.first <= designedSlot(p) && designedSlot(p) <= r.last)!;
        if (!byPort.has(range.port)) byPort.set(range.port, p);
      }
      return byPort;
    }

    it('delivers SPUBLISHes of channels on every primary, each subscribed on its owner', async () => {
      const { sut, inbox } = await startSubscriber(cluster.seeds);
      const byPort = await onePartitionPerPrimary();
      expect(byPort.size).toBe(3);
      const channels = [...byPort.values()].map((p) => channelOf(p));
      await Promise.all(channels.map((channel) => sut.subscribe(channel)));
      for (const channel of channels) expect(await publisher.spublish(channel, `hello ${channel}`)).toBe(1);
      await waitFor(
        () => channels.every((channel) => inbox.got(channel, `hello ${channel}`)),
        () => `a message on each of ${channels.join(', ')}; got ${JSON.stringify(inbox.messages)}`,
      );
      for (const [port, p] of byPort) expect(await cluster.ownerOf(keySlot(channelOf(p)))).toBe(port);
    });

    it('resumes delivery within 2 s after the channel’s slot migrates, and names it as re-subscribed', async () => {
      const { sut, inbox } = await startSubscriber(cluster.seeds, NO_SLOT_CHECK_MS);
      const channel = channelOf(5);
      const slot = keySlot(channel);
      await sut.subscribe(channel);
      const load = publishLoad(publisher, channel);
      await waitFor(() => inbox.of(channel).length >= 5, 'delivery before the migration');
      const from = await cluster.ownerOf(slot);
      const to = (await cluster.slotRanges()).find((r) => r.port !== from)!.port;
      const startedAt = Date.now();
      await cluster.migrateSlot(slot, to);
      const migratedAt = Date.now();
      const first = await firstPublishedAfter(inbox, load, channel, migratedAt, RESUME_BOUND_MS);
      expect(inbox.resubscribed.flat()).toContain(channel);
      report({ event: 'migration', migrationMs: migratedAt - startedAt, resumedAfterMs: first.at - migratedAt });
    });

    it('keeps trying a channel whose SSUBSCRIBE answers MOVED, and subscribes once the slot map agrees', async () => {
      const channel = channelOf(21);
      const slot = String(keySlot(channel));
      const from = await cluster.ownerOf(keySlot(channel));
      const [to, witness] = cluster.nodes.map((n) => n.port).filter((port) => port !== from);
      const { sut, inbox } = await startSubscriber([{ host: '127.0.0.1', port: witness }], NO_SLOT_CHECK_MS);
      // Only the old owner hears of the move: the witness still names it, and it answers MOVED.
      const toId = String(await redisCall(to, ['CLUSTER', 'MYID']));
      await redisCall(from, ['CLUSTER', 'SETSLOT', slot, 'NODE', toId]);
      let settled = false;
      const subscribed = sut.subscribe(channel).finally(() => (settled = true));
      await waitFor(
        async () => (await cluster.ownerOf(keySlot(channel), witness)) === from,
        'the witness’s stale view',
      );
      expect(settled).toBe(false);
      for (const port of [to, witness]) await redisCall(port, ['CLUSTER', 'SETSLOT', slot, 'NODE', toId]);
      await waitFor(() => settled, `the subscribe to ${channel} to settle once the slot map agrees`, 3000);
      await subscribed;
      expect(await publisher.spublish(channel, 'after the move')).toBe(1);
      await waitFor(() => inbox.got(channel, 'after the move'), 'the message after the move');
    });

    it('delivers nothing more on an unsubscribed channel, while its slot neighbour still gets messages', async () => {
      const { sut, inbox } = await startSubscriber(cluster.seeds);
      const gone = channelOf(9, ':gone');
      const barrier = channelOf(9, ':barrier'); // same slot, so same connection: its message comes after gone's
      await Promise.all([sut.subscribe(gone), sut.subscribe(barrier)]);
      await publisher.spublish(gone, 'before');
      await waitFor(() => inbox.got(gone, 'before'), 'the message before unsubscribing');
      await sut.unsubscribe(gone);
      expect(await publisher.spublish(gone, 'after')).toBe(0);
      await publisher.spublish(barrier, 'barrier');
      await waitFor(() => inbox.got(barrier, 'barrier'), 'the barrier message');
      expect(inbox.of(gone)).toEqual(['before']);
    });
  });

  describe('on three primaries with a replica each', () => {
    let cluster: RedisCluster;
    let publisher: Cluster;

    beforeAll(async () => {
      cluster = await startRedisCluster(3, { replicasPerPrimary: 1, nodeTimeoutMs: 1000 });
      publisher = new Cluster(cluster.seeds, { redisOptions: { maxRetriesPerRequest: 2 } });
      publisher.on('error', () => undefined);
    }, 60_000);

    afterAll(async () => {
      publisher?.disconnect();
      await cluster?.stop();
    });

    it('resumes delivery after the channel’s primary is killed and its replica promoted', async () => {
      const { sut, inbox } = await startSubscriber(cluster.seeds);
      const channel = channelOf(17);
      const slot = keySlot(channel);
      await sut.subscribe(channel);
      const load = publishLoad(publisher, channel);
      await waitFor(() => inbox.of(channel).length >= 5, 'delivery before the failover');
      const killed = await cluster.ownerOf(slot);
      const killedAt = Date.now();
      await cluster.node(killed).kill();
      const survivor = cluster.nodes.find((n) => n.port !== killed)!.port;
      const promoted = await waitFor(
        async () => {
          const owner = await cluster.ownerOf(slot, survivor).catch(() => killed);
          return owner !== killed ? owner : undefined;
        },
        `a replica to take over slot ${slot}`,
        20_000,
        20,
      );
      const promotedAt = Date.now();
      const first = await firstPublishedAfter(inbox, load, channel, promotedAt, FAILOVER_RESUME_BOUND_MS);
      expect(inbox.resubscribed.flat()).toContain(channel);
      report({
        event: 'failover',
        killed,
        promoted,
        promotionMs: promotedAt - killedAt,
        resubscribedAfterPromotionMs: inbox.resubscribedAt - promotedAt,
        resumedAfterPromotionMs: first.at - promotedAt,
      });
    }, 40_000);
  });
});
