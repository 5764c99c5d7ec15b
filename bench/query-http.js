'use strict';
// SPEC §15.2 queries over HTTP against one gateway holding real sockets (issue 32):
//   `npm run build && node bench/query-http.js [connections]` (default 19,000)
// One gateway process (dist/main.js, bench/probe.js preloaded), the bench
// upstream, and the clients in a child process of their own, so that each
// process stays under the open-files limit (20,000 here, which rules out
// 100k sockets on one node). Client i is user `q<i mod N/2>` (two connections
// per user) and subscribes to `big/room` through `Gateway-Subscribe`.
// Then, one request in flight, ROUNDS rounds of REQUESTS of each query:
//   user   GET /v1/user/q<random>/connections
//   topic  GET /v1/topic/big/room                (N subscribers, N/2 users)
//   page   GET /v1/topic/big/room?connections=1&limit=1000
// timed by this process (p50, p99, max), with the gateway's event-loop delay
// over the same stretch (monitorEventLoopDelay, resolution 1 ms, through the
// probe); and the same delay over an idle stretch as long, for comparison.

const { fork } = require('node:child_process');
const WebSocket = require('ws');
const { startUpstream, startServer, stopAll, killAllNow, sleep } = require('./lib/stack');

const ROUNDS = Number(process.env.ROUNDS || 3);
const REQUESTS = Number(process.env.REQUESTS || 500);
const IN_FLIGHT = 32;
const PROTOCOL = 'v1.gateway-lattice+json';
const TOPIC = 'big/room';

// ---- clients (child process) ----

function connect(url, localAddress) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, PROTOCOL, { localAddress, perMessageDeflate: false });
    ws.once('error', reject);
    ws.once('message', (data) => {
      ws.on('error', () => undefined);
      if (JSON.parse(data.toString())[0] !== 'hello') return reject(new Error('not hello: ' + data));
      resolve(ws);
    });
  });
}

async function runClients(wsUrl, count) {
  const sockets = [];
  let next = 0;
  const lane = async () => {
    while (next < count) {
      const i = next++;
      // A loopback source address per 2,000 connections: the source ports never run out.
      const localAddress = `127.0.0.${2 + Math.floor(i / 2000)}`;
      const user = `q${i % (count / 2)}`;
      sockets.push(await connect(`${wsUrl}?user=${user}&subscribe=${encodeURIComponent(TOPIC)}`, localAddress));
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, lane));
  process.send({ opened: sockets.length });
  process.on('disconnect', () => process.exit(0));
}

// ---- driver ----

async function get(url) {
  const startedAt = performance.now();
  const res = await fetch(url);
  const body = await res.text();
  if (res.status !== 200) throw new Error(`GET ${url}: ${res.status} ${body}`);
  return { ms: performance.now() - startedAt, body: JSON.parse(body) };
}

const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
const f = (ms) => ms.toFixed(2);

async function measure(server, name, urlOf) {
  await server.request({ probe: 'loop-start' }, 10_000);
  const times = [];
  const startedAt = performance.now();
  for (let i = 0; i < REQUESTS; i++) times.push((await get(urlOf())).ms);
  const wallMs = performance.now() - startedAt;
  const loop = await server.request({ probe: 'loop-stop' }, 10_000);
  times.sort((a, b) => a - b);
  return { name, p50: pct(times, 50), p99: pct(times, 99), max: times[times.length - 1], wallMs, loop };
}

async function idleLoop(server, ms) {
  await server.request({ probe: 'loop-start' }, 10_000);
  await sleep(ms);
  return server.request({ probe: 'loop-stop' }, 10_000);
}

async function main(N) {
  const upstream = await startUpstream();
  const server = await startServer('gateway', upstream.url, { MAX_CONNECTIONS: '100000' });
  const clients = fork(__filename, ['clients', server.url, String(N)], { stdio: 'inherit' });
  const opened = await new Promise((resolve, reject) => {
    clients.once('message', (m) => resolve(m.opened));
    clients.once('exit', (code) => reject(new Error(`the clients process exited (${code})`)));
  });
  const topicUrl = `${server.api}/v1/topic/${TOPIC}`;
  const { body } = await get(topicUrl);
  if (body.subscribers !== N || body.users !== N / 2)
    throw new Error(`expected ${N} subscribers and ${N / 2} users, got ${JSON.stringify(body)}`);
  const user = (await get(`${server.api}/v1/user/q0/connections`)).body;
  const page = (await get(`${topicUrl}?connections=1&limit=1000`)).body;
  if (user.connections.length !== 2 || page.connection_ids.length !== 1000)
    throw new Error(
      `expected 2 connections of q0 and a page of 1000: ${user.connections.length}, ${page.connection_ids.length}`,
    );
  console.log(`${opened} connections (${N / 2} users) on one gateway, all subscribed to ${TOPIC}`);
  console.log(`${ROUNDS} rounds × ${REQUESTS} requests per query, one in flight; times in ms`);
  const queries = [
    ['user', () => `${server.api}/v1/user/q${Math.floor(Math.random() * (N / 2))}/connections`],
    ['topic', () => topicUrl],
    ['page', () => `${topicUrl}?connections=1&limit=1000`],
  ];
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, urlOf] of queries) {
      const r = await measure(server, name, urlOf);
      const idle = await idleLoop(server, r.wallMs);
      console.log(
        `round ${round} ${name.padEnd(5)} latency p50 ${f(r.p50)} p99 ${f(r.p99)} max ${f(r.max)} | ` +
          `loop delay p99 ${f(r.loop.p99Ms)} max ${f(r.loop.maxMs)} (idle: p99 ${f(idle.p99Ms)} max ${f(idle.maxMs)})`,
      );
    }
  }
  clients.kill();
}

if (process.argv[2] === 'clients') {
  runClients(process.argv[3], Number(process.argv[4])).catch((err) => {
    console.error(err);
    process.exit(1);
  });
} else {
  main(Number(process.argv[2] || 19_000))
    .catch((err) => {
      console.error(err);
      process.exitCode = 1;
      killAllNow();
    })
    .finally(() => stopAll());
}
