'use strict';
// CPU and write syscalls per delivery for a fixed fan-out: this build against
// another, run one at a time, alternating, several times (issue 33).
//
//   node bench/fanout-cpu.js --against /tmp/old/dist/main.js
//   node bench/fanout-cpu.js --against /tmp/old/dist/main.js --runs 5 --subscribers 1000 --publishes 600 --inflight 4
//
// Why: delivered msg/s on a shared 2-CPU VM swings with what else runs, but
// the CPU a gateway spends on the same deliveries moves far less (as
// call-cpu.js for calls). Each run starts the gateway with its own upstream
// (bench/upstream.js), opens `subscribers` connections subscribed to one topic
// through /v1, publishes `warmup` messages, then `publishes` more with
// `inflight` POST /v1/publish at a time (the fanout scenario's afap load), and
// reads the gateway's own user and system time (/proc/<pid>/stat) and write
// syscalls (/proc/<pid>/io) from the first publish until every subscriber got
// every message. The clients count frames and parse none. Not part of
// `npm run bench`.

const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const WebSocket = require('ws');
const { measureFixedWork } = require('./lib/fixed-stack');
const { parseArgs, median, sleep } = require('./lib/fixed-calls');

const ROOT = path.resolve(__dirname, '..');
const PROTOCOL = 'v1.gateway-lattice+json';
const TOPIC = 'bench/fan';
const BODY = `{"t":1,"pad":"${'p'.repeat(80)}"}`;
const USAGE =
  'node bench/fanout-cpu.js --against <main.js> [--subscribers 1000] [--publishes 600] [--inflight 4] [--warmup 50] [--runs 3]';

/** One HTTP request on `agent`; resolves with its status. */
function request(agent, method, url, body) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, agent, headers: { 'content-type': 'application/json' } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** `count` subscribers of TOPIC on `port`, each with a frame counter. */
async function openSubscribers(port, apiPort, count) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
  const subscribers = [];
  for (let i = 0; i < count; i++) {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/?user=u${i}`, PROTOCOL, { perMessageDeflate: false });
    const hello = await new Promise((resolve, reject) => {
      ws.once('message', (data) => resolve(JSON.parse(String(data))));
      ws.once('error', reject);
    });
    const status = await request(
      agent,
      'PUT',
      `http://127.0.0.1:${apiPort}/v1/connection/${hello[2].cid}/subscriptions/${TOPIC}`,
    );
    if (status !== 204) throw new Error(`subscribe answered ${status}`);
    const subscriber = { ws, received: 0 };
    ws.on('message', () => subscriber.received++);
    subscribers.push(subscriber);
  }
  agent.destroy();
  return subscribers;
}

/** Publish `count` messages, `inflight` at a time, and wait (bounded) until every subscriber got them all. */
async function publishAll(apiPort, subscribers, count, inflight) {
  const target = subscribers[0].received + count;
  const agent = new http.Agent({ keepAlive: true, maxSockets: inflight });
  let next = 0;
  const lane = async () => {
    while (next < count) {
      next++;
      const status = await request(agent, 'POST', `http://127.0.0.1:${apiPort}/v1/publish/${TOPIC}`, BODY);
      if (status !== 204) throw new Error(`publish answered ${status}`);
    }
  };
  await Promise.all(Array.from({ length: inflight }, lane));
  agent.destroy();
  const deadline = Date.now() + 60_000;
  while (subscribers.some((s) => s.received < target)) {
    if (Date.now() > deadline) throw new Error('not every subscriber got every message within 60 s');
    await sleep(5);
  }
}

/** One measured run of `mainJs`: its own upstream, its own clients; CPU and writes per delivery. */
async function measure(mainJs, o) {
  const port = 23000 + (process.pid % 500) * 4;
  return measureFixedWork(mainJs, port, o.subscribers * o.publishes, {
    async prepare() {
      const subscribers = await openSubscribers(port, port + 1, o.subscribers);
      await publishAll(port + 1, subscribers, o.warmup, o.inflight);
      return subscribers;
    },
    work: (subscribers) => publishAll(port + 1, subscribers, o.publishes, o.inflight),
    release: (subscribers) => subscribers.forEach(({ ws }) => ws.terminate()),
  });
}

async function main() {
  const o = parseArgs(
    process.argv.slice(2),
    { subscribers: 1000, publishes: 600, inflight: 4, warmup: 50, runs: 3 },
    USAGE,
  );
  const builds = { this: path.join(ROOT, 'dist', 'main.js'), against: o.against };
  for (const file of Object.values(builds))
    if (!fs.existsSync(file)) throw new Error(`${file} is missing (npm run build)`);
  console.log(
    `${o.subscribers} subscribers × ${o.publishes} publishes, ${o.inflight} in flight; the gateway's own CPU per delivery`,
  );
  console.log('run | build | user µs | system µs | writes | delivered/s');
  const results = { this: [], against: [] };
  for (let run = 1; run <= o.runs; run++) {
    for (const [name, file] of Object.entries(builds)) {
      const r = await measure(file, o);
      results[name].push(r);
      console.log(
        `${run} | ${name} | ${r.userUs.toFixed(2)} | ${r.systemUs.toFixed(2)} | ${r.writes.toFixed(3)} | ${Math.round(r.perSec)}`,
      );
      await sleep(1000);
    }
  }
  const cpu = (rs) => median(rs.map((r) => r.userUs + r.systemUs));
  const writes = (rs) => median(rs.map((r) => r.writes));
  console.log(
    `median CPU per delivery (user + system): this ${cpu(results.this).toFixed(2)} µs, against ${cpu(results.against).toFixed(2)} µs, ratio ${(cpu(results.this) / cpu(results.against)).toFixed(3)}; ` +
      `writes per delivery: this ${writes(results.this).toFixed(3)}, against ${writes(results.against).toFixed(3)}`,
  );
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err.message);
    process.exit(1);
  },
);
