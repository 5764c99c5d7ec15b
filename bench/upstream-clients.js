'use strict';
// Upstream HTTP clients compared on the rpc path's job: POST a small JSON call
// to the bench upstream over keep-alive and read the whole answer. Not part of
// `npm run bench`; run `node bench/upstream-clients.js [seconds]` when choosing
// the gateway's upstream client. It reports, per client and concurrency, calls/s,
// the client process's CPU time per call (what the gateway pays) and p50/p99.
//
// Clients:
//   axios      configured as src/upstream/upstream.client.ts did before it moved to node:http (keep-alive agent,
//              maxSockets 100, arraybuffer, no transform, validateStatus always,
//              maxRedirects 0, proxy false, an AbortSignal and a timer per request)
//   node:http  http.request with a keep-alive Agent (maxSockets 100) and a timer
//   fetch      Node's built-in fetch (undici, bundled with Node; default pool)

const http = require('node:http');
const path = require('node:path');
const { fork } = require('node:child_process');
// axios is no longer a dependency (the gateway dropped it on these numbers);
// `npm i --no-save axios@1.21.1` brings it back for a comparison run.
const axios = optional('axios');
const { latency } = require('./lib/report');

const SECONDS = Number(process.argv[2] || 3);
const CONCURRENCY = [50, 400];
const TIMEOUT_MS = 30_000;
const now = () => performance.now();
const HEADERS = {
  'Content-Type': 'application/json',
  'User-Agent': 'gateway/0.1.0',
  Authorization:
    'Gateway+json ' + Buffer.from('{"user_id":"u12","cid":"n0000000AbCdEfGhIjKlMnOpQrStUv"}').toString('base64'),
};
const bodyOf = (i) =>
  `[{"request_id":${i},"connection_id":"n0000000AbCdEfGhIjKlMnOpQrStUv"},[{"t":${Date.now()},"pad":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}],{}]`;

function axiosClient(base) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 100, maxFreeSockets: 100 });
  const instance = axios.create();
  const requestBase = {
    method: 'POST',
    httpAgent: agent,
    proxy: false,
    maxRedirects: 0,
    maxContentLength: 10 * 1024 * 1024,
    maxBodyLength: Infinity,
    responseType: 'arraybuffer',
    transformResponse: (data) => data,
    validateStatus: () => true,
  };
  return async (i) => {
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), TIMEOUT_MS);
    try {
      const res = await instance.request({
        ...requestBase,
        url: base + '/echo',
        data: bodyOf(i),
        headers: { ...HEADERS },
        signal: abort.signal,
      });
      return res.status === 200 && JSON.parse(res.data.toString('utf8')) !== undefined;
    } finally {
      clearTimeout(timer);
    }
  };
}

function httpClient(base) {
  const url = new URL(base);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 100, maxFreeSockets: 100 });
  return (i) =>
    new Promise((resolve) => {
      const body = bodyOf(i);
      const req = http.request(
        {
          host: url.hostname,
          port: url.port,
          path: '/echo',
          method: 'POST',
          agent,
          headers: { ...HEADERS, 'Content-Length': Buffer.byteLength(body) },
        },
        (res) => {
          const chunks = [];
          res.on('data', (c) => chunks.push(c));
          res.on('end', () =>
            resolve(res.statusCode === 200 && JSON.parse(Buffer.concat(chunks).toString('utf8')) !== undefined),
          );
        },
      );
      req.setTimeout(TIMEOUT_MS, () => req.destroy(new Error('timeout')));
      req.on('error', () => resolve(false));
      req.end(body);
    });
}

function fetchClient(base) {
  return async (i) => {
    const res = await fetch(base + '/echo', {
      method: 'POST',
      headers: HEADERS,
      body: bodyOf(i),
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
    const text = await res.text();
    return res.status === 200 && JSON.parse(text) !== undefined;
  };
}

async function closedLoop(call, concurrency, seconds) {
  let running = true;
  let calls = 0;
  let errors = 0;
  let next = 0;
  const samples = [];
  const lane = async () => {
    while (running) {
      const t = now();
      const ok = await call(next++).catch(() => false);
      if (ok) calls++;
      else errors++;
      if ((calls & 3) === 0) samples.push(now() - t);
    }
  };
  const cpu0 = process.cpuUsage();
  const t0 = now();
  const lanes = Array.from({ length: concurrency }, lane);
  await new Promise((r) => setTimeout(r, seconds * 1000));
  running = false;
  const elapsed = now() - t0;
  const done = calls;
  const cpu = process.cpuUsage(cpu0);
  await Promise.all(lanes);
  const lat = latency(samples);
  return {
    callsPerSec: (1000 * done) / elapsed,
    cpuUsPerCall: (cpu.user + cpu.system) / done,
    p50: lat.p50,
    p99: lat.p99,
    errors,
  };
}

async function main() {
  const upstream = fork(path.join(__dirname, 'upstream.js'), [], {
    env: { ...process.env, PORT: '0' },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('upstream did not start')), 10_000);
    upstream.once('message', (m) => {
      clearTimeout(timer);
      resolve(m.port);
    });
  });
  const base = `http://127.0.0.1:${port}`;
  const clients = {
    ...(axios ? { axios: axiosClient(base) } : {}),
    'node:http': httpClient(base),
    fetch: fetchClient(base),
  };
  process.stdout.write(`upstream clients, ${SECONDS} s per run (after a 1 s warm-up), Node ${process.version}\n`);
  process.stdout.write('client      in flight    calls/s   CPU µs/call   p50 ms   p99 ms  errors\n');
  try {
    for (const concurrency of CONCURRENCY) {
      for (const [name, call] of Object.entries(clients)) {
        await closedLoop(call, concurrency, 1);
        const r = await closedLoop(call, concurrency, SECONDS);
        process.stdout.write(
          `${name.padEnd(10)}  ${String(concurrency).padStart(9)}  ${r.callsPerSec.toFixed(0).padStart(9)}  ${r.cpuUsPerCall.toFixed(1).padStart(12)}  ${r.p50.toFixed(2).padStart(7)}  ${r.p99.toFixed(2).padStart(7)}  ${String(r.errors).padStart(6)}\n`,
        );
      }
    }
  } finally {
    upstream.kill('SIGTERM');
  }
}

main().catch((err) => {
  process.stderr.write(`${err.stack || err}\n`);
  process.exit(1);
});

function optional(name) {
  try {
    return require(name);
  } catch {
    console.log(`(${name} not installed: skipped)`);
    return null;
  }
}
