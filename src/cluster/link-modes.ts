import { createHash, randomBytes } from 'node:crypto';
import Redis, { Cluster } from 'ioredis';
import { CONTROL_TAG } from './channels';
import { keySlot, partitionTag } from './partition-tags';
import { ClusterSubscriber } from './redis-cluster-client';

/** A script as the link sends it, untimed: its keys and arguments in, Redis' reply out. */
export type ScriptSend = (keys: readonly string[], args: readonly (string | number | Buffer)[]) => Promise<unknown>;

/** A script defined on a link: the Lua Redis runs, and how to send it. */
export interface DefinedScript {
  readonly source: string;
  readonly send: ScriptSend;
}

/**
 * What differs between one Redis (direct or through Sentinel) and a Redis
 * Cluster, chosen once per link: how messages are published and counted,
 * how the subscriber is synced, what identifies the instance (SPEC §13.1),
 * and how scripts run.
 */
export interface LinkMode {
  publish(channel: string, message: string | Buffer): Promise<number>;
  /** Subscriber counts of `channels` (all of one slot), in order. */
  countSubscribers(channels: readonly string[]): Promise<number[]>;
  /** Every message sent to this node on `channel` before now was delivered. */
  sync(channel: string): Promise<unknown>;
  /** The instance's identity: `run_id`, or on a Redis Cluster its primaries' identities. */
  readInstance(): Promise<string>;
  /** Define a script (`#!lua` shebang included); `instanceArg`: see RedisLink.script. */
  define(name: string, keyCount: number | null, source: string, instanceArg?: number): DefinedScript;
  /**
   * `WAIT replicas timeoutMs` where this node's writes of `partitions` (null:
   * control keys) went; resolves to the fewest replicas that confirmed them.
   */
  waitReplicas(partitions: ReadonlyArray<number | null>, replicas: number, timeoutMs: number): Promise<number>;
}

/** What a mode uses of its link. */
export interface ModeLink {
  readonly command: Redis;
  /** The instance as the link knows it now (SPEC §13.1). */
  readonly instance: string;
  timed<T>(command: string, pending: Promise<T>): Promise<T>;
  /** RedisLink.script: a script defined, registered and timed by the link. */
  script(name: string, keyCount: number | null, lua: string): ScriptSend;
}

/** On a Redis Cluster: the subscriber counts of channels of one slot, asked of the primary owning it (SPEC §13.5). */
const SHARD_NUMSUB = `#!lua flags=no-writes
return redis.call('PUBSUB', 'SHARDNUMSUB', unpack(KEYS))`;

/** The error a script on a Redis Cluster answers when it runs on a primary its instance argument does not name. */
const NOT_A_KNOWN_PRIMARY = 'GATEWAY_NOT_A_KNOWN_PRIMARY';

/** One Redis, direct or through Sentinel: plain pub/sub, `run_id` as the instance (read at every reconnection). */
export function serverMode(link: ModeLink, subscriber: Redis): LinkMode {
  const command = link.command;
  return {
    publish: (channel, message) => command.publish(channel, message),
    countSubscribers: async (channels) => {
      const counts = (await command.pubsub('NUMSUB', ...channels)) as Array<string | number>;
      return channels.map((_, i) => Number(counts[2 * i + 1]));
    },
    sync: () => subscriber.ping(),
    readInstance: async () => runIdOf(await link.timed('info', command.info('server'))),
    define: (name, keyCount, source) => ({ source, send: definedCommand(command, name, keyCount, source) }),
    waitReplicas: (_partitions, replicas, timeoutMs) => command.wait(replicas, timeoutMs),
  };
}

/**
 * A Redis Cluster (SPEC §13.5): sharded pub/sub (a message reaches only the
 * primary owning its channel's slot, scripts included), counts asked of
 * that primary, the primaries' identities (node id and `run_id` each) as
 * the instance: a failover or a restarted primary is another instance (new
 * epochs, as after a Redis restart).
 *
 * A script that numbers things (its `instanceArg`) runs only on a primary
 * the instance names, with no window after a primary restarted from an
 * older snapshot: its Lua carries a marker of this process, so its SHA1 is
 * this process's alone, and the first time it runs on a primary whose
 * script cache a restart or a failover emptied, Redis answers NOSCRIPT. The
 * primaries are then read again (their `run_id`s included) before it runs,
 * under the instance read.
 */
export function clusterMode(link: ModeLink, sharded: ClusterSubscriber): LinkMode {
  const command = link.command;
  const marker = randomBytes(8).toString('hex');
  let numsub: ScriptSend | null = null;
  // Reads of the primaries asked for after a reply that may follow a restart: each starts after it was asked.
  let reading: Promise<void> | null = null;
  let queued: Promise<void> | null = null;
  const readAgain = (): Promise<void> => {
    queued ??= (reading ?? Promise.resolve())
      .catch(() => undefined)
      .then(() => {
        queued = null;
        reading = sharded.refresh();
        return reading;
      });
    return queued;
  };
  return {
    publish: (channel, message) => command.spublish(channel, message) as Promise<number>,
    countSubscribers: async (channels) => {
      numsub ??= link.script('gatewayShardNumsub', null, SHARD_NUMSUB);
      const counts = (await numsub(channels, [])) as Array<string | number>;
      return channels.map((_, i) => Number(counts[2 * i + 1]));
    },
    sync: (channel) => sharded.sync(channel),
    readInstance: () => Promise.resolve(sharded.primaries),
    define: (name, keyCount, lua, instanceArg) => {
      const source = lua.replace(/redis\.call\('PUBLISH',/g, "redis.call('SPUBLISH',");
      if (instanceArg === undefined) {
        // ioredis' auto-pipelining routes a call by its first argument, which for a variable key count is the
        // count, not a key: such a script would join another slot's pipeline (and fail its MOVED retry).
        if (keyCount === null) command.options.autoPipeliningIgnoredCommands?.push(name);
        return { source, send: definedCommand(command, name, keyCount, source) };
      }
      const bang = source.indexOf('\n');
      const guarded = `${source.slice(0, bang + 1)}${primaryGuard(instanceArg, marker)}${source.slice(bang + 1)}`;
      const sha = createHash('sha1').update(guarded).digest('hex');
      const current = (args: readonly unknown[]): unknown[] =>
        args.map((arg, i) => (i === instanceArg - 1 ? link.instance : arg));
      const evalsha = (keys: readonly string[], args: readonly unknown[]): Promise<unknown> =>
        command.evalsha(sha, keys.length, ...keys, ...(args as string[]));
      const evalSource = (keys: readonly string[], args: readonly unknown[]): Promise<unknown> =>
        command.eval(guarded, keys.length, ...keys, ...(args as string[]));
      const send: ScriptSend = (keys, args) =>
        evalsha(keys, args).catch(async (err: Error) => {
          // NOSCRIPT: this process's script is new to that primary (first run, restart, failover).
          // GATEWAY_NOT_A_KNOWN_PRIMARY: it ran on a primary the instance does not name (a failover).
          if (!err.message.startsWith('NOSCRIPT') && !err.message.includes(NOT_A_KNOWN_PRIMARY)) throw err;
          await readAgain();
          return evalSource(keys, current(args)).catch(async (again: Error) => {
            if (!again.message.includes(NOT_A_KNOWN_PRIMARY)) throw again;
            await readAgain();
            return evalSource(keys, current(args));
          });
        });
      return { source: guarded, send };
    },
    // WAIT counts the replicas that confirmed the writes of the connection it is sent on: ioredis keeps one
    // connection per primary, so it goes to each primary owning a partition written to.
    waitReplicas: async (partitions, replicas, timeoutMs) => {
      const cluster = command as unknown as Cluster;
      const owners = new Set(partitions.map((partition) => cluster.slots[slotOf(partition)]?.[0]));
      const primaries = cluster.nodes('master').filter(({ options }) => owners.has(`${options.host}:${options.port}`));
      if (primaries.length < owners.size) return -1; // a slot without a known primary: nothing confirmed
      const confirmed = await Promise.all(primaries.map((primary) => primary.wait(replicas, timeoutMs)));
      return Math.min(...confirmed);
    },
  };
}

/** The slot of a partition's keys (null: the control keys). */
function slotOf(partition: number | null): number {
  return keySlot(`{${partition === null ? CONTROL_TAG : partitionTag(partition)}}`);
}

/** A script sent through ioredis' defineCommand (EVALSHA, EVAL when Redis lacks it). */
function definedCommand(command: Redis, name: string, keyCount: number | null, source: string): ScriptSend {
  command.defineCommand(name, keyCount === null ? { lua: source } : { numberOfKeys: keyCount, lua: source });
  const run = (command as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>)[name].bind(command);
  return keyCount === null ? (keys, args) => run(keys.length, ...keys, ...args) : (keys, args) => run(...keys, ...args);
}

/**
 * Lua, after a script's shebang: refuse to run on a primary whose node id
 * ARGV[instanceArg] (the primaries' identities, 12 hex digits of each node
 * id) does not name. The comment marks the script as this process's.
 */
function primaryGuard(instanceArg: number, marker: string): string {
  return (
    `-- gateway process ${marker}\n` +
    `if not string.find(ARGV[${instanceArg}], string.sub(redis.call('CLUSTER', 'MYID'), 1, 12), 1, true) then ` +
    `return redis.error_reply('${NOT_A_KNOWN_PRIMARY}') end\n`
  );
}

/** `run_id` from an `INFO server` reply ('' when absent: every script then treats its data as another instance's). */
export function runIdOf(info: string): string {
  return /^run_id:([0-9a-f]+)\r?$/m.exec(info)?.[1] ?? '';
}
