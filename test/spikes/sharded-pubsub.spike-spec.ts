import Redis, { Cluster, ClusterOptions } from 'ioredis';
import { keySlot, partitionTag } from '../../src/cluster/partition-tags';
import { RedisCluster, startRedisCluster } from '../e2e/harness/redis-topologies';
import { redisCommand } from '../e2e/harness/redis-server';
import { waitFor, within } from '../e2e/harness/wait';

/**
 * Spike for issue 30 (SPEC §13.5), not part of `npm test`:
 *   npx jest -c test/spikes/jest.config.js
 * Does ioredis's sharded pub/sub keep delivering after a slot migration and
 * after a failover, and is one plain subscriber connection per primary
 * workable? Each scenario publishes a numbered message every 10 ms through an
 * ioredis Cluster, subscribes one way, makes the event happen, and prints how
 * long delivery stopped and how many acknowledged publishes never arrived.
 * Findings are printed as JSON lines (`SPIKE {...}`); the few assertions only
 * guard the set-up.
 */

const PUBLISH_EVERY_MS = 10;
/** How long after the event delivery may take to come back before the scenario says "did not resume". */
const RESUME_BOUND_MS = 30_000;

/** One line of findings. */
function report(scenario: string, findings: Record<string, unknown>): void {
  process.stdout.write(`SPIKE ${JSON.stringify({ scenario, ...findings })}\n`);
}

/** Numbered publishes on one channel and what came back, to measure a delivery gap around an event. */
class DeliveryProbe {
  private seq = 0;
  private timer: NodeJS.Timeout | null = null;
  readonly sentAt = new Map<number, number>();
  /** SPUBLISH's answer: the number of subscribers reached, or the error text. */
  readonly outcome = new Map<number, number | string>();
  readonly receivedAt = new Map<number, number>();

  constructor(private readonly channel: string) {}

  start(publisher: Cluster): void {
    this.timer = setInterval(() => {
      const n = this.seq++;
      this.sentAt.set(n, Date.now());
      publisher.spublish(this.channel, String(n)).then(
        (receivers) => this.outcome.set(n, Number(receivers)),
        (err: Error) => this.outcome.set(n, err.message),
      );
    }, PUBLISH_EVERY_MS);
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
  }

  receive(channel: string, message: string): void {
    if (channel === this.channel) this.receivedAt.set(Number(message), Date.now());
  }

  /** Resolves true once `count` messages published after `since` arrived, false after `ms`. */
  resumed(since: number, count: number, ms: number): Promise<boolean> {
    const arrivedAfter = (): number =>
      [...this.receivedAt.keys()].filter((n) => (this.sentAt.get(n) ?? 0) > since).length;
    return waitFor(() => arrivedAfter() >= count, 'delivery to resume', ms, 20).then(
      () => true,
      () => false,
    );
  }

  /**
   * Around an event that started at `eventAt` and ended at `eventEnd`: the
   * longest silence between two arrivals (or until the end), when the first
   * message published after the event arrived, and the acknowledged (≥1
   * receiver) publishes that never arrived.
   */
  summary(eventAt: number, eventEnd: number): Record<string, unknown> {
    const end = Date.now();
    const arrivals = [...this.receivedAt.values(), end].filter((t) => t >= eventAt - 50).sort((a, b) => a - b);
    const silences = arrivals.slice(1).map((t, i) => t - arrivals[i]);
    const sentAfterEvent = [...this.sentAt].filter(([, t]) => t >= eventEnd).map(([n]) => n);
    const firstAfter = sentAfterEvent.map((n) => this.receivedAt.get(n)).find((t) => t !== undefined);
    const outcomes = [...this.sentAt].filter(([, t]) => t >= eventAt).map(([n]) => this.outcome.get(n));
    const errors = [...new Set(outcomes.filter((o): o is string => typeof o === 'string'))];
    return {
      published: this.seq,
      received: this.receivedAt.size,
      longestSilenceMs: Math.max(...silences),
      firstDeliveryOfAPublishAfterEventMs: firstAfter !== undefined ? firstAfter - eventAt : null,
      ackedButLost: [...this.outcome].filter(([n, o]) => typeof o === 'number' && o > 0 && !this.receivedAt.has(n))
        .length,
      publishedToNoSubscriber: outcomes.filter((o) => o === 0).length,
      publishErrors: outcomes.filter((o) => typeof o === 'string').length,
      errorTexts: errors.slice(0, 3),
    };
  }
}

/** A channel of partition `p`, as the gateway will name it: `{tag}` makes its slot p·128+64. */
function channelOf(p: number): string {
  return `gateway:t:{${partitionTag(p)}}:room/${p}`;
}

async function otherPrimary(cluster: RedisCluster, slot: number): Promise<number> {
  const owner = await cluster.ownerOf(slot);
  const other = (await cluster.slotRanges()).find((r) => r.port !== owner);
  if (other === undefined) throw new Error('only one primary');
  return other.port;
}

/** Kill the primary of `slot`; resolves once a surviving node names another primary for it. */
async function failOver(cluster: RedisCluster, slot: number): Promise<{ killed: number; promoted: number }> {
  const killed = await cluster.ownerOf(slot);
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
  return { killed, promoted };
}

type Event = (cluster: RedisCluster, slot: number) => Promise<unknown>;

const EVENTS: Record<string, Event> = {
  'slot migration': async (cluster, slot) => cluster.migrateSlot(slot, await otherPrimary(cluster, slot)),
  'primary killed, replica promoted': failOver,
};

describe('sharded pub/sub with ioredis 5 Cluster (spike)', () => {
  let cluster: RedisCluster;
  const closers: Array<() => unknown> = [];

  beforeEach(async () => {
    cluster = await startRedisCluster(3, { replicasPerPrimary: 1, nodeTimeoutMs: 1000 });
  }, 60_000);

  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
    await cluster?.stop();
  });

  function clusterClient(options: ClusterOptions = {}): Cluster {
    const client = new Cluster(cluster.seeds, options);
    client.on('error', () => undefined);
    closers.push(() => client.disconnect());
    return client;
  }

  /** Publish, subscribe with `subscribe`, run `event`, wait for delivery to resume; print what was seen. */
  async function scenario(
    name: string,
    event: Event,
    subscribe: (probe: DeliveryProbe, channel: string) => Promise<Record<string, unknown>>,
  ): Promise<void> {
    const channel = channelOf(5);
    const slot = keySlot(channel);
    const probe = new DeliveryProbe(channel);
    closers.push(() => probe.stop());
    const extra = await subscribe(probe, channel);
    probe.start(clusterClient());
    if (!(await probe.resumed(0, 20, 5000))) return report(name, { deliveredBeforeTheEvent: false, ...extra });
    const eventAt = Date.now();
    const detail = await event(cluster, slot);
    const eventEnd = Date.now();
    const resumed = await probe.resumed(eventEnd, 20, RESUME_BOUND_MS);
    probe.stop();
    const subscribers = await Promise.all(
      (await cluster.slotRanges()).map(async (r) => [
        r.port,
        await redisCommand(r.port, ['PUBSUB', 'SHARDNUMSUB', channel]),
      ]),
    );
    const summary = probe.summary(eventAt, eventEnd);
    const findings = {
      event: detail ?? null,
      eventMs: eventEnd - eventAt,
      resumed,
      boundMs: RESUME_BOUND_MS,
      ...summary,
    };
    report(name, { ...findings, shardNumSubAfter: subscribers, ...extra });
  }

  describe.each(Object.entries(EVENTS))('%s', (eventName, event) => {
    it('ioredis Cluster, default options (one subscriber connection for the cluster)', async () => {
      await scenario(`${eventName} / Cluster default`, event, async (probe, channel) => {
        const sub = clusterClient();
        const errors: string[] = [];
        sub.on('error', (err: Error) => errors.push(err.message));
        sub.on('smessage', (ch: string, msg: string) => probe.receive(ch, msg));
        const answer = await within(sub.ssubscribe(channel), 'SSUBSCRIBE', 5000).then(
          String,
          (err: Error) => err.message,
        );
        return { ssubscribeAnswer: answer, errors };
      });
    }, 60_000);

    it('ioredis Cluster, shardedSubscribers: true (one subscriber connection per primary)', async () => {
      await scenario(`${eventName} / Cluster shardedSubscribers`, event, async (probe, channel) => {
        const sub = clusterClient({ shardedSubscribers: true });
        const errors: string[] = [];
        sub.on('error', (err: Error) => errors.push(err.message));
        sub.on('smessage', (ch: string, msg: string) => probe.receive(ch, msg));
        await sub.ssubscribe(channel);
        return { errors };
      });
    }, 60_000);

    it('ioredis Cluster, shardedSubscribers: true, slotsRefreshInterval: 1000 (off by default)', async () => {
      await scenario(
        `${eventName} / Cluster shardedSubscribers + slotsRefreshInterval 1000`,
        event,
        async (probe, channel) => {
          const sub = clusterClient({ shardedSubscribers: true, slotsRefreshInterval: 1000 });
          sub.on('smessage', (ch: string, msg: string) => probe.receive(ch, msg));
          await sub.ssubscribe(channel);
          return {};
        },
      );
    }, 60_000);

    it('ioredis Cluster, shardedSubscribers: true, refreshSlotsCache() called once the event is over', async () => {
      let sub: Cluster | null = null;
      const refreshed = async (cluster: RedisCluster, slot: number): Promise<unknown> => {
        const detail = await event(cluster, slot);
        await new Promise<void>((resolve, reject) => sub!.refreshSlotsCache((err) => (err ? reject(err) : resolve())));
        return detail;
      };
      await scenario(
        `${eventName} / Cluster shardedSubscribers + refreshSlotsCache`,
        refreshed,
        async (probe, channel) => {
          sub = clusterClient({ shardedSubscribers: true });
          sub.on('smessage', (ch: string, msg: string) => probe.receive(ch, msg));
          await sub.ssubscribe(channel);
          return {};
        },
      );
    }, 60_000);

    it('our own layer: a plain ioredis connection to the owning primary, resubscribed on sunsubscribe/close', async () => {
      const seen: string[] = [];
      await scenario(`${eventName} / own per-primary subscriber`, event, async (probe, channel) => {
        const own = new PrimarySubscriber(cluster, channel, (ch, msg) => probe.receive(ch, msg), seen);
        closers.push(() => own.close());
        await own.subscribe();
        return { observed: seen };
      });
    }, 60_000);
  });

  it('a Lua script SPUBLISHes and PUBLISHes to a channel under its keys’ tag', async () => {
    const tag = partitionTag(7);
    const key = `gateway:th:{${tag}}:room`;
    const channel = `gateway:t:{${tag}}:room`;
    const client = clusterClient();
    const sub = clusterClient({ shardedSubscribers: true });
    const plain = clusterClient();
    const got: string[] = [];
    sub.on('smessage', (_ch: string, msg: string) => got.push(`smessage ${msg}`));
    plain.on('message', (_ch: string, msg: string) => got.push(`message ${msg}`));
    const ssubscribed = await within(sub.ssubscribe(channel), 'SSUBSCRIBE', 5000).then(String, (e: Error) => e.message);
    await plain.subscribe(channel);
    const script = "redis.call('INCR', KEYS[1]); return redis.call(ARGV[1], ARGV[2], ARGV[3])";
    const run = (command: string, ch: string, msg: string): Promise<unknown> =>
      client.eval(script, 1, key, command, ch, msg).catch((err: Error) => `error: ${err.message}`);
    const results = {
      spublishSameTag: await run('SPUBLISH', channel, 's1'),
      publishSameTag: await run('PUBLISH', channel, 'p1'),
      spublishOtherTag: await run('SPUBLISH', `gateway:t:{${partitionTag(90)}}:room`, 's2'),
      spublishOutsideScript: await client.spublish(channel, 's3'),
    };
    await waitFor(() => got.length >= 3, 'the script’s messages', 5000, 20).catch(() => undefined);
    report('lua SPUBLISH/PUBLISH', { ssubscribed, results, delivered: got });
  }, 60_000);
});

/**
 * What "our own layer" would do, reduced to one channel: a plain ioredis
 * connection to the primary that owns the channel's slot, SSUBSCRIBE there;
 * when Redis pushes `sunsubscribe` (the slot moved away) or the connection
 * closes (the primary died), look the owner up again and SSUBSCRIBE there,
 * retrying (a -MOVED answer or a refused connection) every 100 ms.
 */
class PrimarySubscriber {
  private connection: Redis | null = null;
  private isClosed = false;

  constructor(
    private readonly cluster: RedisCluster,
    private readonly channel: string,
    private readonly onMessage: (channel: string, message: string) => void,
    private readonly observed: string[],
  ) {}

  async subscribe(): Promise<void> {
    const port = await this.cluster.ownerOf(keySlot(this.channel));
    const connection = new Redis(port, '127.0.0.1', { retryStrategy: () => null, maxRetriesPerRequest: 0 });
    this.connection = connection;
    connection.on('smessage', this.onMessage);
    connection.on('error', (err: Error) => this.note(`error on ${port}: ${err.message}`));
    connection.on('sunsubscribe', (ch: string) => this.note(`sunsubscribe event ${ch}`));
    await connection.ssubscribe(this.channel);
    this.note(`ssubscribed on ${port}`);
    connection.once('close', () => {
      this.note(`close ${port}`);
      void this.resubscribe();
    });
    // ioredis has no event for a server-pushed sunsubscribe: it leaves subscriber mode on it (count 0) and
    // reports "Command queue state error" as an error. Watch that the connection still holds the channel.
  }

  close(): void {
    this.isClosed = true;
    this.connection?.disconnect();
  }

  private note(what: string): void {
    this.observed.push(`${Date.now() % 100_000} ${what}`);
    if (what.includes('Command queue state error') && what.includes('sunsubscribe')) {
      this.connection?.disconnect(); // its 'close' resubscribes on the new owner
    }
  }

  private async resubscribe(): Promise<void> {
    while (!this.isClosed) {
      try {
        await this.subscribe();
        return;
      } catch (err) {
        this.note(`resubscribe failed: ${(err as Error).message}`);
        this.connection?.disconnect();
        await new Promise((resolve) => setTimeout(resolve, 100)); // retry backoff, not a synchronisation
      }
    }
  }
}
