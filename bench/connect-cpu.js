'use strict';
// CPU per connect + authorization for a fixed amount of work: this build
// against another, run one at a time, alternating, several times (issue 33).
//
//   node bench/connect-cpu.js --against /tmp/old/dist/main.js
//   node bench/connect-cpu.js --against /tmp/old/dist/main.js --runs 5 --connects 2000 --inflight 64
//
// Why: conn/s on a shared 2-CPU VM swings with what else runs, but the CPU a
// gateway spends on the same connects moves far less (as call-cpu.js for
// calls). Each run starts the gateway with its own upstream (a bare node:http
// server in this process answering the authorization, keep-alive, Node's
// defaults), opens `warmup` connections, then `connects` more with `inflight`
// handshakes at a time (the connect scenario runs 16 per load worker, 64 in
// all), each up to its hello, and reads the gateway's own user and system
// time (/proc/<pid>/stat) and write syscalls (/proc/<pid>/io) over them, and
// the TCP connections the upstream accepted meanwhile. Connections stay open
// until the run ends, as in the connect scenario. Not part of `npm run bench`.

const { spawn } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const path = require('node:path');
const WebSocket = require('ws');
const { parseArgs, untilReady, processUsage: usage, median } = require('./lib/fixed-calls');

const ROOT = path.resolve(__dirname, '..');
const PROTOCOL = 'v1.gateway-lattice+json';
const USAGE =
  'node bench/connect-cpu.js --against <main.js> [--connects 2000] [--inflight 64] [--warmup 300] [--runs 5]';

/** The authorization answer: the `?user=` of the client's query string. */
function startUpstream() {
  const upstream = { accepted: 0, server: null, url: '' };
  upstream.server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      const kwargs = JSON.parse(Buffer.concat(chunks).toString('utf8'))[2];
      const user = new URLSearchParams(kwargs.url_querystring).get('user') ?? 'u';
      res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ user_id: user }));
    });
  });
  upstream.server.on('connection', () => upstream.accepted++);
  return new Promise((resolve) =>
    upstream.server.listen(0, '127.0.0.1', () => {
      upstream.url = `http://127.0.0.1:${upstream.server.address().port}`;
      resolve(upstream);
    }),
  );
}

function freePort() {
  return new Promise((resolve) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** `count` connections, `inflight` handshakes at a time, each awaited up to its hello; pushed to `sockets`. */
async function connectMany(port, count, inflight, prefix, sockets) {
  let next = 0;
  const lane = async () => {
    while (next < count) {
      const user = `${prefix}${next++}`;
      await new Promise((resolve, reject) => {
        const ws = new WebSocket(`ws://127.0.0.1:${port}/?user=${user}`, PROTOCOL, { perMessageDeflate: false });
        ws.once('message', () => resolve(sockets.push(ws)));
        ws.once('error', reject);
      });
    }
  };
  await Promise.all(Array.from({ length: inflight }, lane));
}

/** One run of `mainJs`: CPU per connect, write syscalls per connect, upstream connections opened, conn/s. */
async function measure(mainJs, o) {
  const upstream = await startUpstream();
  const [port, apiPort] = [await freePort(), await freePort()];
  const env = {
    ...process.env,
    UPSTREAM_URL: upstream.url,
    HOST: '127.0.0.1',
    PORT: String(port),
    BACKEND_API_HOST: '127.0.0.1',
    BACKEND_API_PORT: String(apiPort),
    LOG_LEVEL: 'error',
  };
  const gateway = spawn(process.execPath, [mainJs], { env, stdio: ['ignore', 'ignore', 'inherit'] });
  const sockets = [];
  try {
    await untilReady(apiPort, gateway, mainJs, 30_000);
    await connectMany(port, o.warmup, o.inflight, 'w', sockets);
    const before = usage(gateway.pid);
    const acceptedBefore = upstream.accepted;
    const startedAt = performance.now();
    await connectMany(port, o.connects, o.inflight, 'c', sockets);
    const wallMs = performance.now() - startedAt;
    const after = usage(gateway.pid);
    return {
      cpuUs: (after.userUs + after.systemUs - before.userUs - before.systemUs) / o.connects,
      systemUs: (after.systemUs - before.systemUs) / o.connects,
      writes: (after.writes - before.writes) / o.connects,
      upstreamConnections: upstream.accepted - acceptedBefore,
      perSec: (1000 * o.connects) / wallMs,
    };
  } finally {
    for (const ws of sockets) ws.terminate();
    gateway.kill('SIGKILL');
    upstream.server.closeAllConnections();
    upstream.server.close();
  }
}

async function main() {
  const o = parseArgs(process.argv.slice(2), { connects: 2000, inflight: 64, warmup: 300, runs: 5 }, USAGE);
  const builds = { this: path.join(ROOT, 'dist', 'main.js'), against: o.against };
  for (const file of Object.values(builds)) if (!fs.existsSync(file)) throw new Error(`${file} is missing`);
  const results = { this: [], against: [] };
  console.log(`${o.connects} connects + authorization per run, ${o.inflight} in flight, after ${o.warmup}; one node`);
  console.log(
    'run | build | µs CPU per connect (of it system) | writes per connect | upstream connections opened | conn/s',
  );
  for (let run = 1; run <= o.runs; run++) {
    // Alternate which build goes first, so a trend of the machine hits both alike.
    for (const name of run % 2 === 1 ? ['this', 'against'] : ['against', 'this']) {
      const r = await measure(builds[name], o);
      results[name].push(r);
      console.log(
        `${run} | ${name} | ${r.cpuUs.toFixed(0)} (${r.systemUs.toFixed(0)}) | ${r.writes.toFixed(2)} | ${r.upstreamConnections} | ${r.perSec.toFixed(0)}`,
      );
    }
  }
  const summary = (name) => {
    const rs = results[name];
    const cpu = median(rs.map((r) => r.cpuUs));
    const opened = median(rs.map((r) => r.upstreamConnections));
    return { cpu, opened, perSec: median(rs.map((r) => r.perSec)), writes: median(rs.map((r) => r.writes)) };
  };
  const [mine, theirs] = [summary('this'), summary('against')];
  for (const [name, s] of [
    ['this', mine],
    ['against', theirs],
  ])
    console.log(
      `${name}: median ${s.cpu.toFixed(0)} µs CPU and ${s.writes.toFixed(2)} writes per connect, ` +
        `${s.opened} upstream connections opened, ${s.perSec.toFixed(0)} conn/s`,
    );
  console.log(
    `this ÷ against: CPU per connect ${(mine.cpu / theirs.cpu).toFixed(2)}×, conn/s ${(mine.perSec / theirs.perSec).toFixed(2)}×`,
  );
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err.message);
    process.exit(1);
  },
);
