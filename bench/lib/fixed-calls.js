'use strict';
// What the fixed-work comparisons (bench/call-cpu.js, bench/instructions.js,
// bench/resume-cpu.js) share: their options, the readiness wait, a process's
// own CPU, the client sockets and the closed-loop echo calls (the rpc
// scenario's load, a fixed number of calls).

const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const WebSocket = require('ws');

const SUBPROTOCOL = 'v1.gateway-lattice+json';
const PAD = 'x'.repeat(64);

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const CLOCK_TICK_US = 10_000; // USER_HZ = 100 on Linux

/** A process's CPU (µs, user and system) and read/write syscalls so far, from /proc. */
function processUsage(pid) {
  const io = fs.readFileSync(`/proc/${pid}/io`, 'utf8');
  const count = (name) => Number(new RegExp(`${name}: (\\d+)`).exec(io)[1]);
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return {
    userUs: Number(stat[11]) * CLOCK_TICK_US,
    systemUs: Number(stat[12]) * CLOCK_TICK_US,
    reads: count('syscr'),
    writes: count('syscw'),
  };
}

/** The median of numbers. */
function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

/** `--against <main.js>` (required unless `defaults.against` is given) and the options of `defaults` (a number where the default is one); `--help` prints `usage`. */
function parseArgs(argv, defaults, usage) {
  const o = { against: null, ...defaults };
  for (let i = 0; i < argv.length; i++) {
    const key = argv[i].replace(/^--/, '');
    if (key === 'help') {
      console.log(usage);
      process.exit(0);
    }
    if (!(key in o)) throw new Error(`unknown option ${argv[i]}`);
    o[key] =
      key === 'against' ? path.resolve(argv[++i]) : typeof defaults[key] === 'number' ? Number(argv[++i]) : argv[++i];
  }
  if (o.against === null && !('against' in defaults))
    throw new Error('--against <main.js> is required (the other build, e.g. /tmp/old/dist/main.js)');
  return o;
}

function isReady(url) {
  return new Promise((resolve) => {
    http
      .get(url, (res) => {
        res.resume();
        resolve(res.statusCode === 200);
      })
      .on('error', () => resolve(false));
  });
}

/** Waits for GET /health/ready → 200 on `apiPort`; throws when `proc` exits or `timeoutMs` passes. */
async function untilReady(apiPort, proc, what, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  while (!(await isReady(`http://127.0.0.1:${apiPort}/health/ready`))) {
    if (proc.exitCode !== null) throw new Error(`${what} exited before it was ready`);
    if (Date.now() > deadline) throw new Error(`${what} not ready within ${timeoutMs / 1000} s`);
    await sleep(timeoutMs > 60_000 ? 500 : 100);
  }
}

/** `count` client sockets on `port`, each past its hello. */
async function openClients(port, count) {
  const sockets = [];
  for (let i = 0; i < count; i++) {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/?user=u${i}`, SUBPROTOCOL, { perMessageDeflate: false });
    await new Promise((resolve, reject) => {
      ws.once('message', resolve);
      ws.once('error', reject);
    });
    sockets.push(ws);
  }
  return sockets;
}

/** `perConnection` echo calls on every socket, `inflight` at a time on each. */
function callAll(sockets, perConnection, inflight) {
  return Promise.all(
    sockets.map(
      (ws) =>
        new Promise((resolve, reject) => {
          let sent = 0;
          let answered = 0;
          const send = () => ws.send('["echo",{"request_id":' + ++sent + '},[{"t":1,"pad":"' + PAD + '"}],{}]');
          const onMessage = (data) => {
            if (data[2] !== 0x72) return reject(new Error('call failed: ' + String(data).slice(0, 120)));
            if (++answered === perConnection) {
              ws.off('message', onMessage);
              return resolve();
            }
            if (sent < perConnection) send();
          };
          ws.on('message', onMessage);
          for (let i = 0; i < Math.min(inflight, perConnection); i++) send();
        }),
    ),
  );
}

module.exports = { parseArgs, untilReady, processUsage, median, openClients, callAll, sleep };
