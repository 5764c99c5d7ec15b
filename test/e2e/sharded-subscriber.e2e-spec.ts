import { Cluster } from 'ioredis';
import { designedSlot, keySlot, partitionTag } from '../../src/cluster/partition-tags';
import { ShardedSubscriber } from '../../src/cluster/sharded-subscriber';
import { RedisCluster, startRedisCluster } from './harness/redis-topologies';
import { waitFor } from './harness/wait';

/**
 * {@link ShardedSubscriber} against a real three-primary Redis Cluster (SPEC
 * §13.5, issue 30): SPUBLISHes through an ioredis `Cluster` reach it on every
 * primary, delivery resumes after the channel's slot migrates (the case where
 * ioredis's own sharded subscribers stop for good, test/spikes/README.md),
 * and an unsubscribed channel gets nothing more.
 */

/** How long after a slot migration delivery may take to come back (issue 30: resubscribed within 2 s). */
const RESUME_BOUND_MS = 2000;

function channelOf(p: number, suffix = ''): string {
  return `gateway:t:{${partitionTag(p)}}:room/${p}${suffix}`;
}

/** What the subscriber delivered, in order. */
class Inbox {
  readonly messages: Array<{ channel: string; message: string; at: number }> = [];
  readonly resubscribed: string[][] = [];

  constructor(sut: ShardedSubscriber) {
    sut.onMessage((channel, message) => this.messages.push({ channel, message: message.toString(), at: Date.now() }));
    sut.onResubscribed((channels) => this.resubscribed.push(channels));
  }

  got(channel: string, message: string): boolean {
    return this.messages.some((m) => m.channel === channel && m.message === message);
  }

  of(channel: string): string[] {
    return this.messages.filter((m) => m.channel === channel).map((m) => m.message);
  }
}

describe(ShardedSubscriber.name, () => {
  let cluster: RedisCluster;
  let publisher: Cluster;
  let sut: ShardedSubscriber;
  let inbox: Inbox;
  let publishTimer: NodeJS.Timeout | null = null;

  beforeAll(async () => {
    cluster = await startRedisCluster(3);
    publisher = new Cluster(cluster.seeds, { redisOptions: { maxRetriesPerRequest: 2 } });
    publisher.on('error', () => undefined);
  }, 30_000);

  afterAll(async () => {
    publisher?.disconnect();
    await cluster?.stop();
  });

  beforeEach(async () => {
    sut = new ShardedSubscriber(cluster.seeds);
    inbox = new Inbox(sut);
    await sut.start();
  });

  afterEach(async () => {
    if (publishTimer !== null) clearInterval(publishTimer);
    publishTimer = null;
    await sut.close();
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
    const channel = channelOf(5);
    const slot = keySlot(channel);
    await sut.subscribe(channel);
    let seq = 0;
    const sentAt = new Map<string, number>();
    publishTimer = setInterval(() => {
      const message = String(seq++);
      sentAt.set(message, Date.now());
      publisher.spublish(channel, message).catch(() => undefined);
    }, 10);
    await waitFor(() => inbox.of(channel).length >= 5, 'delivery before the migration');
    const from = await cluster.ownerOf(slot);
    const to = (await cluster.slotRanges()).find((r) => r.port !== from)!.port;
    const migrationStartedAt = Date.now();
    await cluster.migrateSlot(slot, to);
    const migratedAt = Date.now();
    const firstAfter = await waitFor(
      () => inbox.messages.find((m) => m.channel === channel && (sentAt.get(m.message) ?? 0) > migratedAt),
      () => `a message published after the migration; last received ${inbox.of(channel).slice(-1)}`,
      RESUME_BOUND_MS,
    );
    expect(inbox.resubscribed.flat()).toContain(channel);
    process.stdout.write(
      `SHARDED ${JSON.stringify({ migrationMs: migratedAt - migrationStartedAt, resumedAfterMigrationMs: firstAfter.at - migratedAt, from, to })}\n`,
    );
  });

  it('delivers nothing more on an unsubscribed channel, while its slot neighbour still gets messages', async () => {
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
