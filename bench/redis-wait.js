'use strict';
// What REDIS_WAIT_REPLICAS=1 costs (SPEC §13.1, issue 28): one gateway node in
// cluster mode on a private Redis primary with one replica (both started here
// on free ports, stopped by PID), publishes with history (`POST /v1/publish`)
// and lattice updates (`POST /v1/lattice`) in a closed loop of keep-alive
// connections, one request in flight each; rounds alternate a node started
// with REDIS_WAIT_REPLICAS=0 and one with 1, so both see the same machine.
// Figures per setting: requests/s and p99 latency (median over the rounds),
// and the ratio wait=1 ÷ wait=0 in this run. Not part of `npm run bench`.
//
//   npm run build && node bench/redis-wait.js [--seconds 5] [--rounds 3] [--connections 16]

const { spawn } = require('node:child_process');
const http = require('node:http');
const net = require('node:net');
const { parseArgs, median, sleep } = require('./lib/fixed-calls');
const { freePort, startApiNode } = require('./lib/api-node');

const USAGE = 'node bench/redis-wait.js [--seconds 5] [--rounds 3] [--connections 16]';
const BODY = '{"text":"hello, this is a 64-byte JSON message body!!","seq":1234}';
const WORKLOADS = [
  { key: 'publish', path: '/v1/publish/bench/wait', body: BODY },
  { key: 'lattice', path: '/v1/lattice/bench/wait', body: '{"shared":{"room":{"msg_counter":7}}}' },
];

/** A redis-server child on `port`; resolves once it answers. */
async function redisServer(port, extra = []) {
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...extra],
    { stdio: 'ignore' },
  );
  for (let i = 0; i < 200; i++) {
    if ((await redisInfo(port, 'server').catch(() => '')) !== '') return child;
    await sleep(25);
  }
  throw new Error(`redis-server on ${port} did not start`);
}

/** `INFO <section>` over a raw socket (no client library needed). */
function redisInfo(port, section) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let text = '';
    socket.on('data', (chunk) => {
      text += chunk.toString();
      const size = /^\$(\d+)\r\n/.exec(text);
      if (size && Buffer.byteLength(text) >= size[0].length + Number(size[1])) {
        socket.end();
        resolve(text);
      }
    });
    socket.on('error', reject);
    socket.write(`INFO ${section}\r\n`);
  });
}

/** `connections` closed loops of one request each for `ms`: requests/s, p99 ms, non-204 answers. */
async function load(apiPort, workload, connections, ms) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  const latencies = [];
  let errors = 0;
  const endAt = Date.now() + ms;
  const loop = async () => {
    while (Date.now() < endAt) {
      const startedAt = process.hrtime.bigint();
      const status = await new Promise((resolve) => {
        const req = http.request(
          {
            host: '127.0.0.1',
            port: apiPort,
            method: 'POST',
            path: workload.path,
            agent,
            headers: { 'content-type': 'application/json' },
          },
          (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode));
          },
        );
        req.on('error', () => resolve(0));
        req.end(workload.body);
      });
      latencies.push(Number(process.hrtime.bigint() - startedAt) / 1e6);
      if (status !== 204) errors++;
    }
  };
  const startedAt = Date.now();
  await Promise.all(Array.from({ length: connections }, loop));
  agent.destroy();
  latencies.sort((a, b) => a - b);
  return {
    perSec: (1000 * latencies.length) / (Date.now() - startedAt),
    p99: latencies[Math.floor(latencies.length * 0.99)],
    errors,
  };
}

function gateway(redisPort, wait) {
  return startApiNode(
    {
      REDIS_URL: `redis://127.0.0.1:${redisPort}`,
      REDIS_PREFIX: `bench-wait-${process.pid}-${Date.now()}:`,
      REDIS_WAIT_REPLICAS: String(wait),
      REDIS_WAIT_TIMEOUT: '1s',
    },
    `gateway (REDIS_WAIT_REPLICAS=${wait})`,
  );
}

async function main() {
  const o = parseArgs(process.argv.slice(2), { seconds: 5, rounds: 3, connections: 16, against: undefined }, USAGE);
  const primaryPort = await freePort();
  const replicaPort = await freePort();
  const children = [];
  try {
    children.push(await redisServer(primaryPort));
    children.push(await redisServer(replicaPort, ['--replicaof', '127.0.0.1', String(primaryPort)]));
    while (!/slave0:.*state=online/.test(await redisInfo(primaryPort, 'replication'))) await sleep(25);
    const results = {};
    for (let round = 0; round < o.rounds; round++) {
      for (const wait of [0, 1]) {
        const node = await gateway(primaryPort, wait);
        children.push(node.child);
        for (const workload of WORKLOADS) {
          await load(node.apiPort, workload, o.connections, 500); // warm-up
          const r = await load(node.apiPort, workload, o.connections, o.seconds * 1000);
          if (r.errors > 0)
            throw new Error(`${workload.key} with REDIS_WAIT_REPLICAS=${wait}: ${r.errors} answers other than 204`);
          (results[workload.key] ??= { 0: [], 1: [] })[wait].push(r);
        }
        node.child.kill('SIGTERM');
        await new Promise((resolve) => node.child.once('exit', resolve));
      }
    }
    console.log(
      `REDIS_WAIT_REPLICAS, one node, a local replica, ${o.connections} connections, ${o.rounds} rounds of ${o.seconds} s (medians)`,
    );
    console.log('| workload | wait=0 req/s | wait=1 req/s | ratio | wait=0 p99 ms | wait=1 p99 ms | ratio |');
    console.log('|---|---:|---:|---:|---:|---:|---:|');
    for (const [key, byWait] of Object.entries(results)) {
      const rate = (w) => median(byWait[w].map((r) => r.perSec));
      const p99 = (w) => median(byWait[w].map((r) => r.p99));
      console.log(
        `| ${key} | ${rate(0).toFixed(0)} | ${rate(1).toFixed(0)} | ${(rate(1) / rate(0)).toFixed(2)}× | ${p99(0).toFixed(2)} | ${p99(1).toFixed(2)} | ${(p99(1) / p99(0)).toFixed(2)}× |`,
      );
    }
  } finally {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  }
}

main().catch((err) => {
  console.error(err.message);
  process.exit(1);
});
