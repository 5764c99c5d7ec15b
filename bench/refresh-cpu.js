'use strict';
// The gateway's own CPU per authorization refresh against per new connect +
// authorization (issue 31, SPEC §14), and the refreshes per second it
// sustained, for `connections` connections with a `ttl` lifetime.
//
//   node bench/refresh-cpu.js
//   node bench/refresh-cpu.js --connections 10000 --ttl 60 --inflight 20
//
// Set-up: one gateway (dist/main.js) with AUTHORIZATION_TTL=<ttl>s and pings
// off (PING_INTERVAL=1h, so that the idle connections cost nothing between
// the phases), the bench upstream (bench/upstream.js, a process of its own,
// not counted; it answers a refresh with the identity it was sent, so every
// refresh is `ok`). Phases, CPU read from /proc/<pid>/stat (user + system):
// 1. connect: `connections` resumable connections, `inflight` handshakes at a
//    time (measured: CPU per connect + authorization);
// 2. idle: 5 s with nothing due (measured: the idle rate, subtracted below);
// 3. refresh: from just before the first refresh is due (85% of the ttl after
//    the first connect) until every connection was refreshed once (the
//    upstream's count; measured: CPU per refresh, idle rate subtracted, and
//    refreshes per second over that span).
// A refresh's timing is the lifetime's, not the gateway's speed: the rate
// shows that it kept up with the schedule (all refreshed within the ±5%
// spread plus the connect phase), and CPU per refresh says what one costs.
// Not part of `npm run bench`.

const fs = require('node:fs');
const path = require('node:path');
const WebSocket = require('ws');
const { startFixedStack } = require('./lib/fixed-stack');
const { parseArgs, processUsage, sleep } = require('./lib/fixed-calls');

const ROOT = path.resolve(__dirname, '..');
const PROTOCOLS = ['v1.gateway-lattice+json', 'gateway-resume'];
const USAGE = 'node bench/refresh-cpu.js [--connections 10000] [--ttl 60] [--inflight 20]';

function open(port, user) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/?user=${user}`, PROTOCOLS, { perMessageDeflate: false });
    ws.once('message', () => resolve(ws));
    ws.once('error', reject);
  });
}

async function pool(count, inflight, job) {
  const out = new Array(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: inflight }, async () => {
      while (next < count) {
        const i = next++;
        out[i] = await job(i);
      }
    }),
  );
  return out;
}

const cpuUs = (pid) => {
  const usage = processUsage(pid);
  return usage.userUs + usage.systemUs;
};

function refreshCount(upstream) {
  return new Promise((resolve) => {
    const id = Math.random();
    const onMessage = (m) => {
      if (m.id !== id) return;
      upstream.off('message', onMessage);
      resolve(m.refreshes);
    };
    upstream.on('message', onMessage);
    upstream.send({ id, cmd: 'counts' });
  });
}

async function main() {
  const o = parseArgs(process.argv.slice(2), { connections: 10_000, ttl: 60, inflight: 20, against: null }, USAGE);
  const mainJs = path.join(ROOT, 'dist', 'main.js');
  if (!fs.existsSync(mainJs)) throw new Error(`${mainJs} is missing (npm run build)`);
  const port = 24000 + (process.pid % 500) * 2;
  const { upstream, gateway, stop } = await startFixedStack(mainJs, port, {
    PING_INTERVAL: '1h',
    MAX_CONNECTIONS: String(o.connections + 100),
    AUTHORIZATION_TTL: `${o.ttl}s`,
  });
  let sockets = [];
  try {
    const pid = gateway.pid;

    const firstAt = Date.now();
    let cpu = cpuUs(pid);
    sockets = await pool(o.connections, o.inflight, (i) => open(port, `c${i}`));
    const connectMs = Date.now() - firstAt;
    const connectUs = cpuUs(pid) - cpu;
    await sleep(500);

    cpu = cpuUs(pid);
    const idleStart = Date.now();
    await sleep(5000);
    const idleUsPerMs = (cpuUs(pid) - cpu) / (Date.now() - idleStart);

    // Just before the first refresh can be due (85% of the lifetime after the first connect).
    const dueFrom = firstAt + o.ttl * 850;
    if (Date.now() < dueFrom - 500) await sleep(dueFrom - 500 - Date.now());
    const before = await refreshCount(upstream);
    if (before !== 0) throw new Error(`${before} refreshes before the window: the measurement started late`);
    cpu = cpuUs(pid);
    const windowStart = Date.now();
    let firstSeenAt = null;
    let done = 0;
    const deadline = firstAt + o.ttl * 1000 + connectMs + 10_000;
    while (done < o.connections) {
      if (Date.now() > deadline) throw new Error(`only ${done} of ${o.connections} refreshed by the lifetime's end`);
      await sleep(100);
      done = await refreshCount(upstream);
      if (firstSeenAt === null && done > 0) firstSeenAt = Date.now();
    }
    const lastAt = Date.now();
    const refreshUs = cpuUs(pid) - cpu - idleUsPerMs * (lastAt - windowStart);
    const spanS = (lastAt - firstSeenAt) / 1000;

    const perConnect = connectUs / o.connections;
    const perRefresh = refreshUs / o.connections;
    console.log(
      `${o.connections} connections, lifetime ${o.ttl} s, ${o.inflight} handshakes in flight; the gateway's own CPU (upstream not counted)`,
    );
    console.log(`connect phase: ${connectMs} ms, ${perConnect.toFixed(0)} µs per connect + authorization`);
    console.log(`idle: ${(idleUsPerMs * 1000).toFixed(0)} µs of CPU per second (subtracted below)`);
    console.log(
      `refresh phase: ${o.connections} refreshes in ${spanS.toFixed(1)} s (${(o.connections / spanS).toFixed(0)}/s), ${perRefresh.toFixed(0)} µs per refresh`,
    );
    console.log(`refresh ÷ connect (CPU): ${(perRefresh / perConnect).toFixed(2)}`);
  } finally {
    for (const ws of sockets) ws.terminate();
    await stop();
  }
}

main().catch((err) => {
  console.error(err.message);
  process.exit(1);
});
