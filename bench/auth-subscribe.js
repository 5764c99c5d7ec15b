'use strict';
// SPEC §15.1 benchmark (issue 32): `node bench/auth-subscribe.js` after `npm run build`.
//
// One gateway process (dist/main.js) and one upstream process (this file,
// role "upstream"); the load runs in this process. Three ways of connecting a
// client subscribed to its own topic `user/<user>`, picked by the URL's ?mode=:
//   none    the authorization answer only, no subscription (the floor)
//   put     the upstream's handler PUTs /v1/connection/<cid>/subscriptions/user/<user>
//           to the gateway, then answers (two round trips, as before §15.1)
//   header  the answer carries `Gateway-Subscribe: user/<user>` (one round trip)
// connect: rounds interleave the modes (none, put, header, none, …); each round
// opens ROUND_CONNECTS connections, 16 handshakes in flight, and measures from
// the first upgrade to the last hello; then they close.
// idle: per mode, a fresh gateway, STORM connections opened (16 in flight) and
// kept; RSS and heap used (the gateway's /metrics) before and 2 s after.
// Before measuring, one connection per mode checks that a publish reaches it
// (put, header) or not (none).

const fs = require('node:fs');
const http = require('node:http');
const { fork } = require('node:child_process');
const WebSocket = require('ws');
const { startGatewayProcess } = require('../examples/demo');

const MODES = ['none', 'put', 'header'];
const ROUNDS = Number(process.env.ROUNDS || 5);
const ROUND_CONNECTS = Number(process.env.ROUND_CONNECTS || 2000);
const STORM = Number(process.env.STORM || 10_000);
const IN_FLIGHT = 16;
const PROTOCOL = 'v1.gateway-lattice+json';

// ---- upstream (child process) ----

function runUpstream() {
  let apiUrl = '';
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const put = (path) =>
    new Promise((resolve, reject) => {
      const req = http.request(apiUrl + path, { method: 'PUT', agent }, (res) => {
        res.resume();
        res.on('end', () => (res.statusCode === 204 ? resolve() : reject(new Error(`PUT ${res.statusCode}`))));
      });
      req.on('error', reject);
      req.end();
    });
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', async () => {
      if (req.url !== '/gateway/authorize_connection') return res.writeHead(200, JSON_TYPE).end('{}');
      const [meta, , kwargs] = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      const query = new URLSearchParams(kwargs.url_querystring);
      const user = query.get('user');
      const mode = query.get('mode');
      const body = JSON.stringify({ user_id: user });
      const headers = { ...JSON_TYPE, 'Content-Length': Buffer.byteLength(body) };
      if (mode === 'header') headers['Gateway-Subscribe'] = `user/${user}`;
      if (mode === 'put') await put(`/v1/connection/${meta.connection_id}/subscriptions/user/${user}`);
      res.writeHead(200, headers).end(body);
    });
  });
  server.keepAliveTimeout = 60_000;
  process.on('message', (msg) => {
    if (msg.apiUrl) apiUrl = msg.apiUrl;
  });
  process.on('disconnect', () => process.exit(0));
  server.listen(0, '127.0.0.1', () => process.send({ port: server.address().port }));
}

const JSON_TYPE = { 'Content-Type': 'application/json' };

// ---- driver ----

let localHost = 2;
/** A new loopback source address per batch, so closed sockets' TIME_WAIT never exhausts the ports. */
function nextLocalAddress() {
  localHost = localHost >= 250 ? 2 : localHost + 1;
  return `127.0.0.${localHost}`;
}

function connect(url, localAddress) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, PROTOCOL, { localAddress, perMessageDeflate: false });
    const fail = (err) => reject(err);
    ws.once('error', fail);
    ws.once('message', (data) => {
      ws.off('error', fail);
      ws.on('error', () => undefined);
      const frame = JSON.parse(data.toString());
      if (frame[0] !== 'hello') return reject(new Error('not hello: ' + data));
      resolve(ws);
    });
  });
}

/** Open `count` connections of `mode` (16 in flight); returns them, and hello/s from the first upgrade to the last hello. */
async function openMany(wsUrl, mode, count, prefix) {
  const localAddress = nextLocalAddress();
  const sockets = [];
  let next = 0;
  const startedAt = performance.now();
  const lane = async () => {
    while (next < count) {
      const i = next++;
      sockets.push(await connect(`${wsUrl}/?user=${prefix}${i}&mode=${mode}`, localAddress));
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, lane));
  return { sockets, perSec: (1000 * count) / (performance.now() - startedAt) };
}

async function closeAll(sockets) {
  await Promise.all(
    sockets.map(
      (ws) =>
        new Promise((resolve) => {
          ws.once('close', resolve);
          ws.close();
        }),
    ),
  );
}

/** CPU time (ms) a process used so far: utime + stime of /proc/<pid>/stat. */
function cpuMsOf(pid) {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // clock ticks of 10 ms (USER_HZ 100)
}

async function metric(apiUrl, name) {
  const text = await (await fetch(`${apiUrl}/metrics`)).text();
  const line = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  return line === null ? NaN : Number(line[1]);
}

async function untilConnections(apiUrl, count) {
  for (let i = 0; i < 1000; i++) {
    if ((await metric(apiUrl, 'gateway_connections')) === count) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`gateway_connections never reached ${count}`);
}

async function startStack() {
  const upstream = fork(__filename, ['upstream'], { stdio: 'inherit' });
  const { port } = await new Promise((resolve) => upstream.once('message', resolve));
  const gateway = await startGatewayProcess({
    upstreamUrl: `http://127.0.0.1:${port}`,
    port: 0,
    apiPort: 0,
    env: { LOG_FORMAT: 'json', MAX_CONNECTIONS: '100000' },
    onLine: () => undefined,
  });
  const apiUrl = `http://127.0.0.1:${gateway.internalPort}`;
  upstream.send({ apiUrl });
  return {
    wsUrl: `ws://127.0.0.1:${gateway.publicPort}`,
    apiUrl,
    gatewayPid: gateway.child.pid,
    upstreamPid: upstream.pid,
    stop: async () => {
      upstream.kill();
      await gateway.stop();
    },
  };
}

/** A publish to the topic of a connection of each mode reaches it exactly when the mode subscribes. */
async function checkModes(stack) {
  for (const mode of MODES) {
    const ws = await connect(`${stack.wsUrl}/?user=check-${mode}&mode=${mode}`, nextLocalAddress());
    const got = new Promise((resolve) => {
      ws.once('message', (data) => resolve(JSON.parse(data.toString())[0]));
      setTimeout(() => resolve('nothing'), 500);
    });
    await fetch(`${stack.apiUrl}/v1/publish/user/check-${mode}`, {
      method: 'POST',
      headers: JSON_TYPE,
      body: '{"check":1}',
    });
    const frame = await got;
    const expected = mode === 'none' ? 'nothing' : 'message';
    if (frame !== expected) throw new Error(`mode ${mode}: expected ${expected}, got ${frame}`);
    await closeAll([ws]);
  }
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function connectScenario() {
  const stack = await startStack();
  try {
    await checkModes(stack);
    const warm = await openMany(stack.wsUrl, 'put', 500, 'warm');
    await closeAll(warm.sockets);
    const rates = Object.fromEntries(MODES.map((mode) => [mode, []]));
    const cpu = Object.fromEntries(MODES.map((mode) => [mode, []]));
    for (let round = 0; round < ROUNDS; round++) {
      for (const mode of MODES) {
        const cpuBefore = cpuMsOf(stack.gatewayPid) + cpuMsOf(stack.upstreamPid);
        const { sockets, perSec } = await openMany(stack.wsUrl, mode, ROUND_CONNECTS, `r${round}${mode}`);
        const cpuAfter = cpuMsOf(stack.gatewayPid) + cpuMsOf(stack.upstreamPid);
        rates[mode].push(Math.round(perSec));
        cpu[mode].push(Math.round((1000 * (cpuAfter - cpuBefore)) / ROUND_CONNECTS));
        await closeAll(sockets);
        await untilConnections(stack.apiUrl, 0);
      }
    }
    return { rates, cpu };
  } finally {
    await stack.stop();
  }
}

async function idleScenario(mode) {
  const stack = await startStack();
  try {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const rssBefore = await metric(stack.apiUrl, 'process_resident_memory_bytes');
    const heapBefore = await metric(stack.apiUrl, 'nodejs_heap_size_used_bytes');
    const opened = [];
    for (let done = 0; done < STORM; done += 2000) {
      opened.push(...(await openMany(stack.wsUrl, mode, Math.min(2000, STORM - done), `s${done}-`)).sockets);
    }
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const rssAfter = await metric(stack.apiUrl, 'process_resident_memory_bytes');
    const heapAfter = await metric(stack.apiUrl, 'nodejs_heap_size_used_bytes');
    await closeAll(opened);
    return {
      rssPerConnKiB: (rssAfter - rssBefore) / STORM / 1024,
      heapPerConnKiB: (heapAfter - heapBefore) / STORM / 1024,
    };
  } finally {
    await stack.stop();
  }
}

async function main() {
  console.log(`connect: ${ROUNDS} rounds × ${ROUND_CONNECTS} connections per mode, ${IN_FLIGHT} in flight`);
  const { rates, cpu } = await connectScenario();
  const med = Object.fromEntries(MODES.map((mode) => [mode, median(rates[mode])]));
  const cpuMed = Object.fromEntries(MODES.map((mode) => [mode, median(cpu[mode])]));
  for (const mode of MODES) {
    console.log(`  ${mode.padEnd(6)} median ${med[mode]} conn/s  rounds ${rates[mode].join(' ')}`);
    console.log(`         gateway+upstream CPU per connect: median ${cpuMed[mode]} µs  rounds ${cpu[mode].join(' ')}`);
  }
  const ratio = (a, b) => (a / b).toFixed(2) + '×';
  console.log(`  conn/s: header ÷ put ${ratio(med.header, med.put)}, header ÷ none ${ratio(med.header, med.none)}`);
  console.log(
    `  CPU:    header ÷ put ${ratio(cpuMed.header, cpuMed.put)}, header ÷ none ${ratio(cpuMed.header, cpuMed.none)}`,
  );
  console.log(`idle: ${STORM} connections kept, per connection after the storm (gateway's /metrics, 2 s settle)`);
  for (const mode of MODES) {
    const idle = await idleScenario(mode);
    console.log(
      `  ${mode.padEnd(6)} RSS ${idle.rssPerConnKiB.toFixed(2)} KiB  heap used ${idle.heapPerConnKiB.toFixed(2)} KiB`,
    );
  }
}

if (process.argv[2] === 'upstream') runUpstream();
else
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
