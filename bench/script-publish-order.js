'use strict';
/**
 * Why the topic append script publishes inside Lua (docs/cluster.md, "Scripts
 * that publish"): two writers ("nodes", each its own Redis connection) number
 * messages of one topic with a script, as the history append does, and a
 * subscriber on a third connection counts the messages that arrive after a
 * later offset of the same topic. Two ways:
 * - in-script: the script numbers the message and PUBLISHes it in the same
 *   step (what src/pubsub/topic-log.ts does);
 * - after: the script numbers it and returns; the writer PUBLISHes on the
 *   reply (what STYLE rule 12's "the script returns it, TypeScript
 *   publishes it" would do).
 *
 * Usage: node bench/script-publish-order.js [messages per writer, default 20000]
 * Needs redis-server (Redis 7) on the PATH: it starts a private one.
 */
const Redis = require('ioredis');
const { startPrivateRedis } = require('../examples/private-redis');

const PER_WRITER = Number(process.argv[2] || 20_000);
const IN_FLIGHT = 16;

const NUMBER = `local o = redis.call('INCR', KEYS[1])
if ARGV[2] == '1' then redis.call('PUBLISH', ARGV[1], o) end
return o`;

async function run(redis, mode) {
  const channel = `order:${mode}`;
  const counter = `n:${mode}`;
  const writers = [new Redis(redis.url), new Redis(redis.url)];
  const subscriber = new Redis(redis.url);
  for (const w of writers) w.defineCommand('number', { numberOfKeys: 1, lua: NUMBER });
  let highest = 0;
  let late = 0;
  let received = 0;
  const total = PER_WRITER * writers.length;
  const done = new Promise((resolve) =>
    subscriber.on('message', (_, text) => {
      const offset = Number(text);
      if (offset < highest) late += 1;
      else highest = offset;
      if (++received === total) resolve();
    }),
  );
  await subscriber.subscribe(channel);
  const inScript = mode === 'in-script' ? '1' : '0';
  const write = async (w) => {
    for (let sent = 0; sent < PER_WRITER; sent += IN_FLIGHT) {
      await Promise.all(
        Array.from({ length: IN_FLIGHT }, async () => {
          const offset = await w.number(counter, channel, inScript);
          if (inScript === '0') await w.publish(channel, String(offset));
        }),
      );
    }
  };
  await Promise.all(writers.map(write));
  await done;
  for (const c of [...writers, subscriber]) c.disconnect();
  return { late, total };
}

async function main() {
  const redis = await startPrivateRedis();
  try {
    for (const mode of ['in-script', 'after']) {
      const { late, total } = await run(redis, mode);
      const share = ((100 * late) / total).toFixed(2);
      console.log(`${mode.padEnd(9)} ${late} of ${total} messages arrived after a later offset (${share}%)`);
    }
  } finally {
    await redis.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
