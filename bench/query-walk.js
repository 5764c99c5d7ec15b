'use strict';
// SPEC §15.2 query cost at 100k connections on one node, on the query code
// itself (dist/queries, `npm run build` first) over 100k connection-shaped
// objects: how long one query holds the event loop.
//   `node bench/query-walk.js [connections]`
// - topic users: distinctUsers over a topic's 100k subscribers (50k users),
//   the longest stretch without a turn of the loop (monitorEventLoopDelay's
//   max, and the longest gap between setImmediate turns) and the total time;
// - a page of 1000 (limit max) at the end of a 100k list (a user with 100k
//   connections, or `?connections=1` of that topic): nodeSlice's time, which
//   runs without a yield.

const { monitorEventLoopDelay, performance } = require('node:perf_hooks');
const { distinctUsers, nodeSlice } = require('../dist/queries/node-answers');

const N = Number(process.argv[2] || 100_000);
const ROUNDS = 5;

async function longestTurn(run) {
  let last = performance.now();
  let longest = 0;
  let isDone = false;
  const tick = () => {
    const at = performance.now();
    longest = Math.max(longest, at - last);
    last = at;
    if (!isDone) setImmediate(tick);
  };
  setImmediate(tick);
  const histogram = monitorEventLoopDelay({ resolution: 1 });
  histogram.enable();
  const startedAt = performance.now();
  await run();
  const totalMs = performance.now() - startedAt;
  isDone = true;
  histogram.disable();
  return { totalMs, longestTurnMs: longest, loopDelayMaxMs: histogram.max / 1e6 };
}

async function main() {
  const subscribers = new Set();
  for (let i = 0; i < N; i++) subscribers.add({ id: `node-conn${i}`, userId: `user${i % (N / 2)}`, state: 'ready' });
  const results = { users: [], slice: [] };
  for (let round = 0; round < ROUNDS; round++) {
    let users = 0;
    results.users.push(await longestTurn(async () => (users = (await distinctUsers(subscribers)).size)));
    if (users !== N / 2) throw new Error(`expected ${N / 2} users, got ${users}`);
    const startedAt = performance.now();
    const slice = nodeSlice(
      'node',
      subscribers,
      subscribers.size,
      { from: { node: 'node', offset: N - 1000 }, limit: 1000 },
      (c) => c.id,
    );
    results.slice.push(performance.now() - startedAt);
    if (slice.items.length !== 1000) throw new Error('short slice');
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const f = (ms) => ms.toFixed(2) + ' ms';
  console.log(`${N} subscribers, ${N / 2} users, ${ROUNDS} rounds (medians; worst in brackets)`);
  console.log(
    `topic users walk: total ${f(median(results.users.map((r) => r.totalMs)))}, longest loop turn ` +
      `${f(median(results.users.map((r) => r.longestTurnMs)))} [${f(Math.max(...results.users.map((r) => r.longestTurnMs)))}], ` +
      `event-loop delay max ${f(median(results.users.map((r) => r.loopDelayMaxMs)))}`,
  );
  console.log(`page of 1000 at offset ${N - 1000}: ${f(median(results.slice))} [${f(Math.max(...results.slice))}]`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
