'use strict';
// CPU per call for a fixed amount of work: this build against another, run
// one at a time, alternating, several times.
//
//   node bench/call-cpu.js --against /tmp/old/dist/main.js
//   node bench/call-cpu.js --against /tmp/old/dist/main.js --runs 3 --calls 600 --inflight 8
//
// Why: calls/s on a shared 2-CPU VM swing by ±25% between back-to-back runs,
// but the CPU a gateway spends on the same 30,000 calls moves by a few percent
// only. This is how session 6 found the rpc ×8 regression of issue 22
// (bench/RESULTS.md): 50 connections with `inflight` echo calls each in
// flight, `calls` per connection after a warm-up, and the gateway process's
// own user and system time (/proc/<pid>/stat) and read/write syscalls
// (/proc/<pid>/io) over the measured calls. Each gateway gets its own
// upstream (bench/upstream.js). Not part of `npm run bench`.

const fs = require('node:fs');
const path = require('node:path');
const { parseArgs, median, openClients, callAll, sleep } = require('./lib/fixed-calls');
const { measureFixedWork } = require('./lib/fixed-stack');

const ROOT = path.resolve(__dirname, '..');
const USAGE =
  'node bench/call-cpu.js --against <main.js> [--connections 50] [--inflight 8] [--calls 600 per connection] [--warmup 200] [--runs 3]';

/** One measured run of `mainJs`: its own upstream, its own clients; CPU per call. */
async function measure(mainJs, o) {
  const port = 22000 + (process.pid % 500) * 4;
  return measureFixedWork(mainJs, port, o.connections * o.calls, {
    async prepare() {
      const sockets = await openClients(port, o.connections);
      await callAll(sockets, o.warmup, o.inflight);
      return sockets;
    },
    work: (sockets) => callAll(sockets, o.calls, o.inflight),
    release: (sockets) => sockets.forEach((ws) => ws.terminate()),
  });
}

async function main() {
  const o = parseArgs(process.argv.slice(2), { connections: 50, inflight: 8, calls: 600, warmup: 200, runs: 3 }, USAGE);
  const builds = { this: path.join(ROOT, 'dist', 'main.js'), against: o.against };
  for (const file of Object.values(builds))
    if (!fs.existsSync(file)) throw new Error(`${file} is missing (npm run build)`);
  console.log(
    `${o.connections} connections × ${o.calls} calls, ${o.inflight} in flight each; the gateway's own CPU per call`,
  );
  console.log('run | build | user µs | system µs | reads | writes | calls/s');
  const results = { this: [], against: [] };
  for (let run = 1; run <= o.runs; run++) {
    for (const [name, file] of Object.entries(builds)) {
      const r = await measure(file, o);
      results[name].push(r);
      console.log(
        `${run} | ${name} | ${r.userUs.toFixed(1)} | ${r.systemUs.toFixed(1)} | ${r.reads.toFixed(3)} | ${r.writes.toFixed(3)} | ${Math.round(r.perSec)}`,
      );
      await sleep(1000);
    }
  }
  const cpu = (rs) => median(rs.map((r) => r.userUs + r.systemUs));
  console.log(
    `median CPU per call (user + system): this ${cpu(results.this).toFixed(1)} µs, against ${cpu(results.against).toFixed(1)} µs, ratio ${(cpu(results.this) / cpu(results.against)).toFixed(3)}`,
  );
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err.message);
    process.exit(1);
  },
);
