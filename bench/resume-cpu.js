'use strict';
// The gateway's own CPU per resume against per new connect + authorization,
// for a fixed amount of work (issue 19's "resumes per second one node
// sustains against new connects", SPEC §12.3).
//
//   node bench/resume-cpu.js
//   node bench/resume-cpu.js --sessions 2000 --rounds 6 [--against /tmp/old/dist/main.js]
//   node bench/resume-cpu.js --redis redis://127.0.0.1:6379   # one node in cluster mode (SPEC §12.5), Redis not counted
//
// Why: the resume scenario of `npm run bench` measures rates, and on a 2-CPU
// machine its load generators' own handshakes, and the upstream answering the
// authorizations, share the CPUs with the gateway, so the rate of a bare
// handshake bounds both sides (bench/RESULTS.md, session 6). What a node
// sustains when it is the bottleneck is its own CPU per operation: read here
// from /proc/<pid>/stat (user + system), the upstream (bench/upstream.js, a
// process of its own) not counted. Set-up: `sessions` resumable connections,
// each subscribed to a topic of its own (as the resume scenario). Each round
// (after an uncounted first): every session dropped without a close frame,
// then all resumed with their latest token (measured), then as many new
// resumable connections with authorization (measured), then those closed
// with 1000 (not measured). 20 handshakes in flight. Then the same number of
// handshakes, as many rounds, on the handshake floor (bench/baseline/
// handshake-floor.js: a raw `ws` server that sends one hello and does nothing
// else): no resume can cost less. Not part of `npm run bench`.

const { spawn } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const WebSocket = require('ws');
const { startFixedStack } = require('./lib/fixed-stack');
const { parseArgs, untilReady, processUsage, median, sleep } = require('./lib/fixed-calls');

const ROOT = path.resolve(__dirname, '..');
const LATTICE = 'v1.gateway-lattice+json';
const USAGE =
  'node bench/resume-cpu.js [--sessions 2000] [--rounds 6] [--inflight 20] [--against <main.js>] [--redis <url>]';

/** One handshake; resolves with the socket and its hello. */
function open(port, user, protocols) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/?user=${user}`, protocols, { perMessageDeflate: false });
    ws.once('message', (data) => resolve({ ws, hello: JSON.parse(String(data)) }));
    ws.once('error', reject);
  });
}

/** `count` jobs, `inflight` at a time. */
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

function put(apiPort, path, agent) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: apiPort, method: 'PUT', path, agent }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode === 204 ? resolve() : reject(new Error(`PUT ${path}: ${res.statusCode}`))));
    });
    req.on('error', reject);
    req.end();
  });
}

/** The gateway's CPU (µs) for what `work` makes it do, idle tail included (one ping interval is far longer). */
async function cpuFor(pid, work) {
  const before = processUsage(pid);
  await work();
  await sleep(200);
  const after = processUsage(pid);
  return after.userUs + after.systemUs - before.userUs - before.systemUs;
}

async function measure(mainJs, o) {
  const port = 23000 + (process.pid % 500) * 4;
  const env = { RESUME_WINDOW: '2m' };
  if (o.redis !== null)
    Object.assign(env, { REDIS_URL: o.redis, REDIS_PREFIX: `bench-resume-${process.pid}-${Date.now()}:` });
  const { gateway, stop } = await startFixedStack(mainJs, port, env);
  let sessions = [];
  const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
  try {
    const optIn = [LATTICE, 'gateway-resume'];
    sessions = await pool(o.sessions, o.inflight, (i) => open(port, `s${i}`, optIn));
    await pool(o.sessions, 8, (i) =>
      put(port + 1, `/v1/connection/${sessions[i].hello[2].cid}/subscriptions/user/s${i}`, agent),
    );
    const rounds = [];
    for (let round = 0; round <= o.rounds; round++) {
      for (const { ws } of sessions) ws.terminate();
      await sleep(500); // the drops reach the gateway (not measured)
      const resumeUs = await cpuFor(gateway.pid, async () => {
        sessions = await pool(o.sessions, o.inflight, async (i) => {
          const offer = Buffer.from(
            JSON.stringify({ token: sessions[i].hello[1].resume.token, positions: {} }),
          ).toString('base64url');
          const resumed = await open(port, `s${i}`, [LATTICE, `gateway-resume.${offer}`]);
          if (resumed.hello[1].resumed !== true)
            throw new Error(`session ${i} not resumed: ${JSON.stringify(resumed.hello[1])}`);
          return resumed;
        });
      });
      let fresh = [];
      const connectUs = await cpuFor(gateway.pid, async () => {
        fresh = await pool(o.sessions, o.inflight, (i) => open(port, `n${round}_${i}`, optIn));
      });
      for (const { ws } of fresh) ws.close(1000);
      await sleep(500);
      if (round > 0) rounds.push({ resumeUs: resumeUs / o.sessions, connectUs: connectUs / o.sessions });
    }
    return rounds;
  } finally {
    agent.destroy();
    for (const { ws } of sessions) ws.terminate();
    await stop();
  }
}

/** CPU per handshake of the handshake floor, round by round (after an uncounted first). */
async function measureFloor(o) {
  const port = 23400 + (process.pid % 500) * 2;
  const floor = spawn(process.execPath, [path.join(__dirname, 'baseline', 'handshake-floor.js')], {
    env: { ...process.env, HOST: '127.0.0.1', PORT: String(port), BACKEND_API_PORT: String(port + 1) },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  try {
    await untilReady(port + 1, floor, 'the handshake floor', 10_000);
    // The same subprotocol header a resume sends (the floor ignores the offer).
    const offer = [LATTICE, `gateway-resume.${'A'.repeat(60)}`];
    const rounds = [];
    for (let round = 0; round <= o.rounds; round++) {
      let sockets = [];
      const us = await cpuFor(floor.pid, async () => {
        sockets = await pool(o.sessions, o.inflight, (i) => open(port, `f${i}`, offer));
      });
      for (const { ws } of sockets) ws.terminate();
      await sleep(500);
      if (round > 0) rounds.push(us / o.sessions);
    }
    return rounds;
  } finally {
    floor.kill('SIGKILL');
  }
}

async function main() {
  const o = parseArgs(
    process.argv.slice(2),
    { against: null, redis: null, sessions: 2000, rounds: 6, inflight: 20 },
    USAGE,
  );
  const builds = { this: path.join(ROOT, 'dist', 'main.js') };
  if (o.against !== null) builds.against = o.against;
  for (const file of Object.values(builds))
    if (!fs.existsSync(file)) throw new Error(`${file} is missing (npm run build)`);
  const mode = o.redis === null ? 'one node' : 'cluster mode (one node, Redis not counted)';
  console.log(
    `${o.sessions} sessions with a topic each, ${o.rounds} rounds after a warm-up, ${mode}; the gateway's own CPU per operation`,
  );
  console.log('build | round | µs per resume | µs per connect + auth | connect ÷ resume');
  const summary = [];
  for (const [name, file] of Object.entries(builds)) {
    const rounds = await measure(file, o);
    rounds.forEach((r, i) =>
      console.log(
        `${name} | ${i + 1} | ${r.resumeUs.toFixed(0)} | ${r.connectUs.toFixed(0)} | ${(r.connectUs / r.resumeUs).toFixed(2)}`,
      ),
    );
    const resume = median(rounds.map((r) => r.resumeUs));
    const connect = median(rounds.map((r) => r.connectUs));
    summary.push(
      `${name}: median ${resume.toFixed(0)} µs per resume, ${connect.toFixed(0)} µs per connect + auth: a resume costs ${(resume / connect).toFixed(2)}× a connect (${(connect / resume).toFixed(2)}× as many per CPU second)`,
    );
  }
  const floor = await measureFloor(o);
  floor.forEach((us, i) => console.log(`floor | ${i + 1} | ${us.toFixed(0)} (a bare handshake) | |`));
  summary.push(`floor: median ${median(floor).toFixed(0)} µs per bare handshake (no resume can cost less)`);
  for (const line of summary) console.log(line);
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err.message);
    process.exit(1);
  },
);
