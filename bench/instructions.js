'use strict';
// Instructions per call: this build against another, each gateway under
// valgrind's callgrind, both in the same run and at the same time.
//
//   node bench/instructions.js --against /tmp/old/dist/main.js
//   node bench/instructions.js --against /tmp/old/dist/main.js --connections 50 --inflight 8 --calls 200 --runs 2
//
// Why: calls/s on a shared 2-CPU VM swings by ±25% between back-to-back runs
// (bench/RESULTS.md, session 5), so a "ratio ≥ 0.98" cannot be decided from
// throughput there. callgrind counts the instructions the gateway process
// executes, not seconds: the count does not depend on what else the machine
// does. Both gateways run at once, under the same slowdown, so they see the
// same batching of frames per read (which changes the count per call).
//
// Each gateway gets its own upstream (bench/upstream.js, not under valgrind)
// and its own client connections; after a warm-up the counters are zeroed
// (callgrind_control -z), `connections × calls` echo calls are made with
// `inflight` in flight per connection (the rpc scenario's load), and the
// counters are dumped. The figure is that dump's instructions ÷ calls.
// Needs valgrind (Debian's package); not part of `npm run bench` (a run takes
// about 3 minutes per round).

const { fork, spawn, execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { parseArgs, untilReady, openClients, callAll } = require('./lib/fixed-calls');

const ROOT = path.resolve(__dirname, '..');
const USAGE =
  'node bench/instructions.js --against <main.js> [--connections 50] [--inflight 8] [--calls 200 per connection] [--warmup 50] [--runs 1]';

async function startUpstream() {
  const proc = fork(path.join(__dirname, 'upstream.js'), [], {
    env: { ...process.env, PORT: '0' },
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const port = await new Promise((resolve, reject) => {
    proc.on('message', (m) => m.ready && resolve(m.port));
    proc.once('exit', (code) => reject(new Error(`upstream exited (${code})`)));
  });
  return { proc, url: `http://127.0.0.1:${port}` };
}

/** One gateway under callgrind, its own upstream, `connections` open clients. */
async function startGateway(mainJs, outDir, index, o) {
  const upstream = await startUpstream();
  const port = 21000 + (process.pid % 1000) * 10 + index * 2;
  const env = {
    ...process.env,
    UPSTREAM_URL: upstream.url,
    HOST: '127.0.0.1',
    PORT: String(port),
    BACKEND_API_HOST: '127.0.0.1',
    BACKEND_API_PORT: String(port + 1),
    LOG_LEVEL: 'error',
  };
  const vgdbPrefix = path.join(outDir, 'vgdb');
  const proc = spawn(
    'valgrind',
    [
      '--tool=callgrind',
      `--vgdb-prefix=${vgdbPrefix}`,
      `--callgrind-out-file=${path.join(outDir, 'callgrind.%p')}`,
      process.execPath,
      mainJs,
    ],
    { env, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let tail = '';
  proc.stderr.on('data', (d) => (tail = (tail + d).slice(-2000)));
  await untilReady(port + 1, proc, `${mainJs} under valgrind`, 300_000).catch((err) => {
    throw new Error(`${err.message}:\n${tail}`);
  });
  // callgrind_control finds the process through vgdb, whose pipe names include $HOST: same env.
  const control = (...args) =>
    execFileSync('callgrind_control', [`--vgdb-prefix=${vgdbPrefix}`, ...args, String(proc.pid)], {
      env,
      stdio: 'ignore',
    });
  const sockets = await openClients(port, o.connections);
  return { mainJs, proc, upstream, sockets, control, outDir };
}

async function measure(gateway, o, run) {
  await callAll(gateway.sockets, o.warmup, o.inflight);
  gateway.control('-z');
  await callAll(gateway.sockets, o.calls, o.inflight);
  gateway.control(`--dump=run${run}`);
  const dumps = fs
    .readdirSync(gateway.outDir)
    .filter((f) => f.startsWith('callgrind.'))
    .map((f) => path.join(gateway.outDir, f));
  const latest = dumps.sort((a, b) => fs.statSync(b).mtimeMs - fs.statSync(a).mtimeMs)[0];
  const summary = /^summary: (\d+)$/m.exec(fs.readFileSync(latest, 'utf8'));
  if (summary === null) throw new Error(`no summary in ${latest}`);
  return Number(summary[1]) / (o.connections * o.calls);
}

async function main() {
  const o = parseArgs(process.argv.slice(2), { connections: 50, inflight: 8, calls: 200, warmup: 50, runs: 1 }, USAGE);
  const builds = [path.join(ROOT, 'dist', 'main.js'), o.against];
  for (const file of builds) if (!fs.existsSync(file)) throw new Error(`${file} is missing (npm run build)`);
  const dirs = builds.map((_, i) => fs.mkdtempSync(path.join(os.tmpdir(), `instructions-${i}-`)));
  const gateways = [];
  try {
    for (let i = 0; i < builds.length; i++) gateways.push(await startGateway(builds[i], dirs[i], i, o));
    console.log(
      `${o.connections} connections × ${o.calls} calls, ${o.inflight} in flight each; instructions per call (callgrind)`,
    );
    console.log('run | this build | against | ratio this ÷ against');
    for (let run = 1; run <= o.runs; run++) {
      const [mine, theirs] = await Promise.all(gateways.map((g) => measure(g, o, run)));
      console.log(`${run} | ${Math.round(mine)} | ${Math.round(theirs)} | ${(mine / theirs).toFixed(3)}`);
    }
  } finally {
    for (const g of gateways) {
      for (const ws of g.sockets) ws.terminate();
      g.proc.kill('SIGKILL');
      g.upstream.proc.kill('SIGKILL');
    }
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err.message);
    process.exit(1);
  },
);
