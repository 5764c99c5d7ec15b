'use strict';
// Publishes with history on one Redis against three shards (SPEC §13.4) and a
// three-primary Redis Cluster with sharded pub/sub (SPEC §13.5), issue 30:
// two gateway nodes in cluster mode, each fed `POST /v1/batch` requests of
// BATCH publishes to distinct topics (history on: RESUME_WINDOW's default), in a
// closed loop of keep-alive connections; rounds alternate the two topologies,
// each on fresh redis-servers (started here on free ports, stopped by PID), so
// both see the same machine. Figures per topology (medians over the rounds):
// publishes/s, Redis CPU per publish (every instance's user+system time), the
// busiest instance's share of one core, and the Redis-bound ceiling: the
// publishes/s at which the busiest instance would fill its core. On a machine
// with fewer cores than processes the gateways, not Redis, bound the rate: the
// ceiling is what shards buy. In `npm run bench -- --only redis` as the `redis` scenario (on request).
//
//   npm run build && node bench/redis-shards.js [--seconds 5] [--rounds 3] [--connections 8] [--batch 50] [--against <main.js>] [--only one,shards,cluster]
//
// `--against` adds a row: one Redis under that build of the gateway (e.g. an earlier commit's).

const fs = require('node:fs');
const { execFileSync, spawn } = require('node:child_process');
const os = require('node:os');
const path = require('node:path');
const http = require('node:http');
const net = require('node:net');
const { parseArgs, median, sleep } = require('./lib/fixed-calls');
const { freePort, startApiNode } = require('./lib/api-node');

const USAGE =
  'node bench/redis-shards.js [--seconds 5] [--rounds 3] [--connections 8] [--batch 50] [--against <main.js>] [--only one,shards,cluster]';
const CLOCK_TICK_MS = 10; // USER_HZ = 100 on Linux
const TOPICS = 10_000;
const TOPOLOGIES = ['one', 'shards', 'cluster'];
const LABELS = {
  against: 'one Redis, the --against build',
  one: 'one Redis',
  shards: 'three shards (+ control)',
  cluster: 'Redis Cluster, three primaries',
};

/** A redis-server on a free port; resolves once it answers PING. */
async function redisServer(extraArgs = []) {
  const port = await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-redis-'));
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, ...extraArgs],
    {
      stdio: 'ignore',
    },
  );
  child.once('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
  for (let i = 0; i < 200; i++) {
    if (await pings(port)) return { port, child, url: `redis://127.0.0.1:${port}` };
    await sleep(25);
  }
  throw new Error(`redis-server on ${port} did not start`);
}

function pings(port) {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('error', () => resolve(false));
    socket.once('data', (chunk) => {
      socket.destroy();
      resolve(chunk.toString().startsWith('+PONG'));
    });
    socket.once('connect', () => socket.write('PING\r\n'));
  });
}

/** utime + stime of a process, ms. */
function cpuMs(pid) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(stat[11]) + Number(stat[12])) * CLOCK_TICK_MS;
}

function gateway(nodeId, redisUrl, shards, prefix, main) {
  const env = { NODE_ID: nodeId, REDIS_URL: redisUrl, REDIS_PREFIX: prefix };
  return startApiNode(shards.length > 0 ? { ...env, REDIS_SHARDS: shards.join(' ') } : env, `gateway ${nodeId}`, main);
}

/** `connections` closed loops of one batch each, over both nodes, for `ms`: publishes/s. */
async function load(apiPorts, connections, batch, ms) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  let published = 0;
  let failed = 0;
  let next = 0;
  const endAt = Date.now() + ms;
  const loop = async (i) => {
    const port = apiPorts[i % apiPorts.length];
    while (Date.now() < endAt) {
      const commands = [];
      for (let j = 0; j < batch; j++)
        commands.push({ method: 'POST', path: `/v1/publish/bench/t${next++ % TOPICS}`, body: { seq: next } });
      const answer = await new Promise((resolve) => {
        const req = http.request(
          {
            host: '127.0.0.1',
            port,
            method: 'POST',
            path: '/v1/batch',
            agent,
            headers: { 'content-type': 'application/json' },
          },
          (res) => {
            const chunks = [];
            res.on('data', (c) => chunks.push(c));
            res.on('end', () => resolve(Buffer.concat(chunks).toString()));
          },
        );
        req.on('error', () => resolve(''));
        req.end(JSON.stringify({ commands }));
      });
      const ok = (answer.match(/"status":204/g) ?? []).length;
      published += ok;
      failed += batch - ok;
    }
  };
  const startedAt = Date.now();
  await Promise.all(Array.from({ length: connections }, (_, i) => loop(i)));
  agent.destroy();
  return { perSec: (1000 * published) / (Date.now() - startedAt), published, failed };
}

/** Three cluster-enabled redis-servers formed into a Redis Cluster (equal slot ranges); resolves once every node says ok. */
async function redisCluster(children) {
  const nodes = [];
  for (let i = 0; i < 3; i++) {
    const node = await redisServer(['--cluster-enabled', 'yes', '--cluster-node-timeout', '2000']);
    children.push(node.child);
    nodes.push(node);
  }
  const addresses = nodes.map((n) => `127.0.0.1:${n.port}`);
  execFileSync('redis-cli', ['--cluster', 'create', ...addresses, '--cluster-yes'], { stdio: 'ignore' });
  for (let i = 0; i < 400; i++) {
    const ok = nodes.every((n) =>
      execFileSync('redis-cli', ['-p', String(n.port), 'cluster', 'info'])
        .toString()
        .includes('cluster_state:ok'),
    );
    if (ok) return { nodes, url: `redis+cluster://${addresses.join(',')}` };
    await sleep(25);
  }
  throw new Error('the Redis Cluster did not form');
}

async function round(topology, o) {
  const children = [];
  try {
    if (topology === 'cluster') return await clusterRound(children, o);
    const control = await redisServer();
    children.push(control.child);
    const shards = [];
    if (topology === 'shards')
      for (let i = 0; i < 3; i++) {
        const shard = await redisServer();
        children.push(shard.child);
        shards.push(shard);
      }
    const prefix = `bench-shards-${process.pid}-${Date.now()}:`;
    const nodes = [];
    for (const nodeId of ['nodeA', 'nodeB']) {
      const node = await gateway(
        nodeId,
        control.url,
        shards.map((s) => s.url),
        prefix,
        topology === 'against' ? o.against : undefined,
      );
      children.push(node.child);
      nodes.push(node);
    }
    return await measure(topology, nodes, [control, ...shards], o);
  } finally {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  }
}

async function clusterRound(children, o) {
  const redis = await redisCluster(children);
  const prefix = `bench-cluster-${process.pid}-${Date.now()}:`;
  const nodes = [];
  for (const nodeId of ['nodeA', 'nodeB']) {
    const node = await gateway(nodeId, redis.url, [], prefix);
    children.push(node.child);
    nodes.push(node);
  }
  return measure('cluster', nodes, redis.nodes, o);
}

/** Warm up, then load both nodes for `o.seconds`: publishes/s and the Redis processes' CPU. */
async function measure(topology, nodes, redises, o) {
  const ports = nodes.map((n) => n.apiPort);
  await load(ports, o.connections, o.batch, 500); // warm-up
  const before = redises.map((r) => cpuMs(r.child.pid));
  const startedAt = Date.now();
  const r = await load(ports, o.connections, o.batch, o.seconds * 1000);
  const elapsedMs = Date.now() - startedAt;
  const used = redises.map((redis, i) => cpuMs(redis.child.pid) - before[i]);
  if (r.failed > 0) throw new Error(`${topology}: ${r.failed} publishes not answered 204`);
  const busiest = Math.max(...used) / elapsedMs;
  return {
    perSec: r.perSec,
    redisUsPerPublish: (1000 * used.reduce((a, b) => a + b, 0)) / r.published,
    busiestCore: busiest,
    ceiling: r.perSec / busiest,
  };
}

/**
 * Rounds of every topology in `topologies` (alternating, so each sees the same machine); resolves to
 * the medians per topology: `{ perSec, redisUsPerPublish, busiestCore, ceiling }`.
 */
async function compareTopologies(o, topologies = TOPOLOGIES) {
  const results = Object.fromEntries(topologies.map((topology) => [topology, []]));
  for (let i = 0; i < o.rounds; i++)
    for (const topology of topologies) results[topology].push(await round(topology, o));
  const medians = {};
  for (const topology of topologies) {
    const m = (key) => median(results[topology].map((r) => r[key]));
    medians[topology] = {
      perSec: m('perSec'),
      redisUsPerPublish: m('redisUsPerPublish'),
      busiestCore: m('busiestCore'),
      ceiling: m('ceiling'),
    };
  }
  return medians;
}

/** `npm run bench -- --only redis` rows: shards and the Cluster (gateway column) against one Redis (baseline). */
function topologyRows(label, res, row) {
  const one = res.one;
  const out = [];
  for (const [topology, name] of [
    ['shards', 'three shards'],
    ['cluster', 'Redis Cluster'],
  ]) {
    const r = res[topology];
    out.push(row(label, `${name} ÷ one Redis: publishes`, '/s', r.perSec, one.perSec));
    out.push(
      row(label, `${name} ÷ one Redis: Redis CPU per publish`, 'µs', r.redisUsPerPublish, one.redisUsPerPublish),
    );
    out.push(
      row(label, `${name} ÷ one Redis: Redis-bound ceiling`, '/s', r.ceiling, one.ceiling, { op: '>=', value: 2 }),
    );
  }
  return out;
}

async function main() {
  const o = parseArgs(
    process.argv.slice(2),
    { seconds: 5, rounds: 3, connections: 8, batch: 50, against: undefined, only: undefined },
    USAGE,
  );
  const chosen = o.only === undefined ? TOPOLOGIES : TOPOLOGIES.filter((t) => o.only.split(',').includes(t));
  const topologies = o.against === undefined ? chosen : ['against', ...chosen];
  const medians = await compareTopologies(o, topologies);
  const m = (topology, key) => medians[topology][key];
  console.log(
    `two nodes, history on, /v1/batch of ${o.batch} publishes, ${o.connections} connections, ${o.rounds} rounds of ${o.seconds} s (medians)`,
  );
  console.log(
    '| topology | publishes/s | Redis CPU per publish | busiest Redis core | Redis-bound ceiling, publishes/s |',
  );
  console.log('|---|---:|---:|---:|---:|');
  for (const topology of topologies) {
    console.log(
      `| ${LABELS[topology]} | ${m(topology, 'perSec').toFixed(0)} | ${m(topology, 'redisUsPerPublish').toFixed(2)} µs | ${(100 * m(topology, 'busiestCore')).toFixed(0)}% | ${m(topology, 'ceiling').toFixed(0)} |`,
    );
  }
  if (!topologies.includes('shards') || !topologies.includes('cluster')) return;
  console.log(
    `shards ÷ one Redis: publishes/s ${(m('shards', 'perSec') / m('one', 'perSec')).toFixed(2)}×, ceiling ${(m('shards', 'ceiling') / m('one', 'ceiling')).toFixed(2)}×`,
  );
  console.log(
    `Redis Cluster ÷ one Redis: publishes/s ${(m('cluster', 'perSec') / m('one', 'perSec')).toFixed(2)}×, ceiling ${(m('cluster', 'ceiling') / m('one', 'ceiling')).toFixed(2)}×`,
  );
}

module.exports = { compareTopologies, topologyRows };

if (require.main === module)
  main().catch((err) => {
    console.error(err.message);
    process.exit(1);
  });
