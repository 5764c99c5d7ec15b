import { randomBytes } from 'node:crypto';
import { Logger } from '@nestjs/common';
import { GatewayMetrics } from '../metrics/gateway-metrics';
import { Broker, MemoryBroker } from './broker';
import { ClusterNames } from './channels';
import { NodeLiveness } from './node-liveness';
import { OWNER_ACK_TIMEOUT_MS, RedisBroker } from './redis-broker';
import { RedisLink } from './redis-link';
import { RedisShards } from './redis-shards';
import { movedTo } from './whereabouts';

/** Redis of the test run: TEST_REDIS_URL, else 6379 (the jest globalSetup starts a private one when none answers). */
const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
/** The brokers here wait 1 s for an ack, not SPEC §11's 5 s: four rows wait it out. */
const ACK_TIMEOUT_MS = 1000;

/** Two brokers of one cluster ("a" and "b"); on memory both names are the same single node. */
interface Pair {
  readonly a: Broker;
  readonly b: Broker;
  /** Node id that owns connection ids `<node>-x`. */
  readonly nodeOfB: string;
  /** Whether a and b are really two nodes. */
  readonly isCluster: boolean;
  close(): Promise<void>;
}

async function memoryPair(): Promise<Pair> {
  const broker = new MemoryBroker();
  return { a: broker, b: broker, nodeOfB: 'nodeA', isCluster: false, close: async () => undefined };
}

async function redisPair(probe?: {
  idleMs: number;
  timeoutMs: number;
}): Promise<Pair & { links: RedisLink[]; metrics: GatewayMetrics[] }> {
  const names = new ClusterNames(`test:${randomBytes(6).toString('hex')}:`);
  const links: RedisLink[] = [];
  const brokers: RedisBroker[] = [];
  const metrics: GatewayMetrics[] = [];
  for (const nodeId of ['nodeA', 'nodeB']) {
    const link = new RedisLink(REDIS_URL, new GatewayMetrics(), nodeId);
    if (!(await link.open(3000)))
      throw new Error(`no Redis at ${REDIS_URL}: start one (redis-server) to run the cluster specs`);
    await new NodeLiveness(link, names, nodeId).claim();
    metrics.push(new GatewayMetrics());
    const broker = new RedisBroker(new RedisShards(link), names, nodeId, metrics[metrics.length - 1], ACK_TIMEOUT_MS);
    await broker.start(probe);
    links.push(link);
    brokers.push(broker);
  }
  return {
    a: brokers[0],
    b: brokers[1],
    nodeOfB: 'nodeB',
    isCluster: true,
    links,
    metrics,
    close: async () => {
      for (const broker of brokers) broker.stop();
      await Promise.all(links.map((link) => link.close()));
    },
  };
}

beforeAll(() => Logger.overrideLogger(false));

describe.each([
  ['MemoryBroker', memoryPair],
  ['RedisBroker', redisPair],
])('%s', (_, makePair) => {
  let pair: Pair;
  beforeEach(async () => (pair = await makePair()));
  afterEach(() => pair.close());

  it('runs a command on the owner of the connection and resolves after its effect', async () => {
    const seen: string[] = [];
    let finish!: () => void;
    const effect = new Promise<void>((resolve) => (finish = resolve));
    // On one node the second registration replaces the first.
    pair.a.handle('sub', () => void seen.push('wrong node'));
    pair.b.handle<{ topic: string }>('sub', async (cid, data) => {
      seen.push(`${cid}:${data.topic}`);
      await effect;
      seen.push('applied');
    });
    const done = pair.a.toOwner('sub', `${pair.nodeOfB}-x`, { topic: 't/1' });
    await new Promise((resolve) => setImmediate(resolve));
    let isResolved = false;
    void done.then(() => (isResolved = true));
    await waitUntil(() => seen.length > 0, 'the handler to run');
    expect(isResolved).toBe(false);
    finish();
    await done;
    expect(seen).toEqual([`${pair.nodeOfB}-x:t/1`, 'applied']);
  });

  it('encodes data with the registered codec only when it crosses nodes', async () => {
    const received: unknown[] = [];
    const codec = { encode: (d: Set<string>) => [...d], decode: (j: unknown) => new Set(j as string[]) };
    pair.b.handle<Set<string>>('users', (_, data) => void received.push(data), codec);
    pair.a.handle<Set<string>>('users', (_, data) => void received.push(data), codec);
    await pair.a.toOwner('users', `${pair.nodeOfB}-x`, new Set(['u1', 'u2']));
    expect(received).toEqual([new Set(['u1', 'u2'])]);
  });

  it('runs a command for every node once on each node', async () => {
    const seen: string[] = [];
    pair.a.handle<string>('add', (target, data) => void seen.push(`a:${target}:${data}`));
    pair.b.handle<string>('add', (target, data) => void seen.push(`b:${target}:${data}`));
    await pair.a.toEveryNode('add', 'u1', 'x');
    // On one node the second registration replaced the first: one run.
    expect(seen.sort()).toEqual(pair.isCluster ? ['a:u1:x', 'b:u1:x'] : ['b:u1:x']);
  });

  it('sends channel messages to the other nodes that joined, never back to the sender', async () => {
    const got: string[] = [];
    pair.a.listen('t', (name, payload) => got.push(`a:${name}:${payload.toString()}`));
    pair.b.listen('t', (name, payload) => got.push(`b:${name}:${payload.toString()}`));
    await pair.a.join('t', 'room/1');
    await pair.b.join('t', 'room/1');
    pair.a.send('t', 'room/1', Buffer.from('["message",{"topic":"room.1"},1]'));
    pair.a.send('t', 'room/2', Buffer.from('not joined'));
    pair.b.send('t', 'room/1', Buffer.from('barrier'));
    if (!pair.isCluster) return expect(got).toEqual([]);
    await waitUntil(() => got.includes('a:room/1:barrier'), 'the barrier message on a');
    expect(got).toEqual(['b:room/1:["message",{"topic":"room.1"},1]', 'a:room/1:barrier']);
  });

  it('resolves a command for a connection of a node that is gone, as for an unknown connection', async () => {
    pair.a.handle('sub', () => undefined);
    await expect(pair.a.toOwner('sub', 'nodeGone-x', 't')).resolves.toBeUndefined();
  });
});

describe('RedisBroker batching', () => {
  it('sends the commands for one owner issued in the same tick as one message, applied in order, acked together', async () => {
    const pair = await redisPair();
    try {
      const seen: string[] = [];
      pair.b.handle<string>('sub', (cid, topic) => void seen.push(`${cid}:${topic}`));
      pair.a.handle('sub', () => undefined);
      await Promise.all(Array.from({ length: 20 }, (_, i) => pair.a.toOwner('sub', `nodeB-${i}`, `t/${i}`)));
      expect(seen).toEqual(Array.from({ length: 20 }, (_, i) => `nodeB-${i}:t/${i}`));
      const sent = (await pair.metrics[0].brokerMessages.get()).values;
      expect(
        sent.filter((v) => v.labels.direction === 'out' && v.labels.kind === 'command').map((v) => v.value),
      ).toEqual([1]);
      expect(sent.filter((v) => v.labels.direction === 'in' && v.labels.kind === 'ack').map((v) => v.value)).toEqual([
        1,
      ]);
    } finally {
      await pair.close();
    }
  });
});

describe('RedisBroker with a session that moved while its command ran', () => {
  it("sends a command refused by the session's record (Moved) on to the node that holds it now", async () => {
    const pair = await redisPair();
    try {
      const seen: string[] = [];
      pair.a.handle<string>('sub', (cid) => {
        seen.push(`a:${cid}`);
        return Promise.resolve(movedTo('nodeB'));
      });
      pair.b.handle<string>('sub', (cid) => void seen.push(`b:${cid}`));
      await pair.a.toOwner('sub', 'nodeA-x', 't');
      expect(seen).toEqual(['a:nodeA-x', 'b:nodeA-x']);
    } finally {
      await pair.close();
    }
  });
});

describe('RedisBroker with an owner that does not acknowledge', () => {
  it("waits SPEC §11's 5 s for an ack unless told otherwise", () => {
    expect(OWNER_ACK_TIMEOUT_MS).toBe(5000);
  });

  it('answers owner_unreachable after the ack timeout when the owner received the command but never finished it', async () => {
    const pair = await redisPair();
    try {
      pair.b.handle('stuck', () => new Promise<void>(() => undefined));
      pair.a.handle('stuck', () => undefined);
      const startedAt = Date.now();
      await expect(pair.a.toOwner('stuck', 'nodeB-x', null)).rejects.toMatchObject({ code: 'owner_unreachable' });
      expect(Date.now() - startedAt).toBeGreaterThanOrEqual(ACK_TIMEOUT_MS - 100);
      expect(Date.now() - startedAt).toBeLessThan(ACK_TIMEOUT_MS + 2000);
    } finally {
      await pair.close();
    }
  }, 15_000);

  it('answers cluster_unavailable at once when the owner could not apply the command, and still acks the others of its message', async () => {
    const pair = await redisPair();
    try {
      pair.b.handle<string>('sub', (cid) => {
        if (cid === 'nodeB-bad') throw new Error('its record could not be written');
      });
      pair.a.handle('sub', () => undefined);
      const startedAt = Date.now();
      const [bad, good] = await Promise.allSettled([
        pair.a.toOwner('sub', 'nodeB-bad', 't'),
        pair.a.toOwner('sub', 'nodeB-good', 't'),
      ]);
      expect(bad).toMatchObject({ status: 'rejected', reason: { code: 'cluster_unavailable' } });
      expect(good).toMatchObject({ status: 'fulfilled' });
      expect(Date.now() - startedAt).toBeLessThan(4000);
    } finally {
      await pair.close();
    }
  });
});

describe('RedisBroker commands for every node', () => {
  // Acks are counted by node, not by the receivers PUBLISH counts: another subscriber of the channel (a
  // monitoring tool, or on a Redis Cluster a count that covers one Redis node only) changes nothing.
  it('waits for the acks of the listed nodes that listen, whatever PUBLISH counted', async () => {
    const pair = await redisPair();
    const names = (pair.a as unknown as { names: ClusterNames }).names;
    const onlooker = new RedisLink(REDIS_URL, new GatewayMetrics(), 'onlooker');
    try {
      expect(await onlooker.open(3000)).toBe(true);
      await onlooker.subscribe(names.everyNode);
      // Listed but not listening (a node whose link is down): not waited for.
      await onlooker.command.sadd(names.nodes, 'nodeCut');
      const seen: string[] = [];
      pair.a.handle<string>('add', (target) => void seen.push(`a:${target}`));
      pair.b.handle<string>('add', (target) => void seen.push(`b:${target}`));
      const startedAt = Date.now();
      await pair.a.toEveryNode('add', 'u1', 'x');
      expect(Date.now() - startedAt).toBeLessThan(4000);
      expect(seen.sort()).toEqual(['a:u1', 'b:u1']);
    } finally {
      await onlooker.close();
      await pair.close();
    }
  });

  it('answers owner_unreachable after the ack timeout when a listed node that listens does not acknowledge', async () => {
    const pair = await redisPair();
    try {
      pair.a.handle('stuck', () => undefined);
      pair.b.handle('stuck', () => new Promise<void>(() => undefined));
      const startedAt = Date.now();
      await expect(pair.a.toEveryNode('stuck', 'u1', null)).rejects.toMatchObject({ code: 'owner_unreachable' });
      expect(Date.now() - startedAt).toBeGreaterThanOrEqual(ACK_TIMEOUT_MS - 100);
      expect(Date.now() - startedAt).toBeLessThan(ACK_TIMEOUT_MS + 2000);
    } finally {
      await pair.close();
    }
  }, 15_000);
});

describe('RedisBroker with a subscriber that silently lost its subscriptions', () => {
  it('notices it with a probe and reconnects the subscriber, which resubscribes', async () => {
    const pair = await redisPair({ idleMs: 200, timeoutMs: 300 });
    try {
      const seen: string[] = [];
      pair.b.handle<string>('sub', (cid) => void seen.push(cid));
      pair.a.handle('sub', () => undefined);
      // The fault of a failover: the connection stays up, its subscriptions are gone.
      const subscriber = (pair.links[1] as unknown as { subscriber: { unsubscribe(): Promise<unknown> } }).subscriber;
      await subscriber.unsubscribe();
      await expect(pair.a.toOwner('sub', 'nodeB-1', null)).rejects.toMatchObject({ code: 'owner_unreachable' });
      const deadline = Date.now() + 5000;
      for (;;) {
        try {
          await pair.a.toOwner('sub', 'nodeB-2', null);
          break;
        } catch (err) {
          if (Date.now() > deadline) throw new Error(`node B never listened again: ${(err as Error).message}`);
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      }
      expect(seen).toEqual(['nodeB-2']);
    } finally {
      await pair.close();
    }
  }, 15_000);
});

describe('RedisBroker without a live owner', () => {
  // A PUBLISH that counted no receiver does not prove the owner did not hear it (a Redis Cluster counts the
  // receivers on one Redis node only): an owner alive by its key is waited for, as if counted.
  it('waits for an owner that holds its liveness key although no receiver was counted: owner_unreachable after the ack timeout', async () => {
    const names = new ClusterNames(`test:${randomBytes(6).toString('hex')}:`);
    const link = new RedisLink(REDIS_URL, new GatewayMetrics(), 'nodeA');
    try {
      expect(await link.open(3000)).toBe(true);
      await link.command.set(names.alive('nodeCut'), 'x', 'PX', 5000);
      const sut = new RedisBroker(new RedisShards(link), names, 'nodeA', new GatewayMetrics(), ACK_TIMEOUT_MS);
      sut.handle('sub', () => undefined);
      const startedAt = Date.now();
      await expect(sut.toOwner('sub', 'nodeCut-x', 't')).rejects.toMatchObject({ code: 'owner_unreachable' });
      expect(Date.now() - startedAt).toBeGreaterThanOrEqual(ACK_TIMEOUT_MS - 100);
      expect(Date.now() - startedAt).toBeLessThan(ACK_TIMEOUT_MS + 2000);
    } finally {
      await link.close();
    }
  }, 15_000);
});

async function waitUntil(check: () => boolean, what: string, ms = 2000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
