'use strict';
// Child processes of one scenario run: the upstream, the server under test
// (gateway or baseline, with bench/probe.js preloaded) and the load workers.
// Every wait is bounded; every child is killed by its own pid at the end.

const { fork } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const path = require('node:path');

const BENCH = path.resolve(__dirname, '..');
const ROOT = path.resolve(BENCH, '..');
const PROBE = path.join(BENCH, 'probe.js');
const SERVERS = {
  gateway: path.join(ROOT, 'dist', 'main.js'),
  baseline: path.join(BENCH, 'baseline', 'server.js'),
  express: path.join(BENCH, 'baseline', 'api-bare.js'),
  node: path.join(BENCH, 'baseline', 'api-bare.js'),
  nest: path.join(BENCH, 'baseline', 'api-nest.js'),
  floor: path.join(BENCH, 'baseline', 'handshake-floor.js'),
  socketio: path.join(BENCH, 'baseline', 'socketio.js'),
};
/** Arguments of a target's process (the `api` scenario's bare servers share one file). */
const SERVER_ARGS = { express: ['express'], node: ['node'] };
/** Env of ours or the user's that would change what the gateway does; never passed on. */
const DROPPED_ENV = [
  'GATEWAY_CONFIG',
  'BACKEND_API_TOKEN',
  'REDIS_URL',
  'WS_PATH',
  'ALLOWED_ORIGINS',
  'REQUEST_ID_HEADER',
  'OTEL_EXPORTER_OTLP_ENDPOINT',
  'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
];
/** --tracing: every gateway started exports its spans (100% sampled) to its own bench/otlp-sink.js. */
const tracing = { isOn: false };

function setTracing(isOn) {
  tracing.isOn = isOn;
}

/**
 * --against <main.js>: the "baseline" column is another build of the gateway
 * (e.g. an earlier commit's dist/main.js), so a change is measured against it
 * in one run. It gets the gateway's env but never --tracing: with a copy of
 * this build, `--tracing --against` gives the cost of tracing in one run.
 * --against socketio: the "baseline" column is the Socket.IO peer
 * (baseline/socketio.js), which its clients speak to in Socket.IO's protocol.
 */
function setAgainst(mainJs) {
  SERVERS.baseline = mainJs === 'socketio' ? SERVERS.socketio : path.resolve(mainJs);
}

/** The protocol the clients of `target` speak: 'socketio' for the Socket.IO peer, else 'gateway'. */
function dialectOf(target) {
  return SERVERS[target] === SERVERS.socketio ? 'socketio' : 'gateway';
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const live = new Set();

/**
 * CPU placement (--pin): the server under test gets CPU 0 to itself; the
 * driver, upstream and load workers share the other CPUs. `null` = no pinning.
 */
const placement = { server: null, load: null };

function setPlacement(isPinned) {
  const n = require('node:os').availableParallelism();
  if (!isPinned || n < 2) return false;
  placement.server = '0';
  placement.load = n === 2 ? '1' : `1-${n - 1}`;
  pin(process.pid, placement.load);
  return true;
}

/** taskset -a: every thread of the process (V8 and libuv threads included). */
function pin(pid, cpus) {
  if (cpus === null) return;
  const r = require('node:child_process').spawnSync('taskset', ['-a', '-cp', cpus, String(pid)], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`taskset failed for pid ${pid}: ${r.stderr || r.error}`);
}

/** A forked child answering {id, ...} requests with {id, ...}. */
class Child {
  constructor(proc, name) {
    this.proc = proc;
    this.name = name;
    this.pid = proc.pid;
    this.pending = new Map();
    this.nextId = 1;
    this.exited = null;
    this.tail = '';
    live.add(this);
    const keep = (chunk) => (this.tail = (this.tail + chunk).slice(-4000));
    if (proc.stdout) proc.stdout.on('data', keep);
    if (proc.stderr) proc.stderr.on('data', keep);
    proc.on('message', (msg) => {
      const waiter = msg && this.pending.get(msg.id);
      if (waiter === undefined) return;
      this.pending.delete(msg.id);
      waiter.done(msg);
    });
    proc.on('exit', (code, signal) => {
      this.exited = { code, signal };
      live.delete(this);
      for (const waiter of this.pending.values())
        waiter.fail(new Error(`${name} exited (${code ?? signal}) while answering; last output:\n${this.tail}`));
      this.pending.clear();
    });
  }

  /** Send `msg` and wait at most `timeoutMs` for the answer with the same id. */
  request(msg, timeoutMs) {
    if (this.exited) return Promise.reject(new Error(`${this.name} is not running; last output:\n${this.tail}`));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`${this.name}: no answer to ${msg.cmd || msg.probe} within ${timeoutMs} ms`));
      }, timeoutMs);
      const settle = (fn) => (value) => {
        clearTimeout(timer);
        fn(value);
      };
      this.pending.set(id, {
        done: settle((m) => (m.error ? reject(new Error(`${this.name}: ${m.error}`)) : resolve(m))),
        fail: settle(reject),
      });
      this.proc.send({ ...msg, id });
    });
  }

  async stop() {
    if (this.exited) return;
    const gone = new Promise((r) => this.proc.once('exit', r));
    this.proc.kill('SIGTERM');
    if (await Promise.race([gone.then(() => true), sleep(3000).then(() => false)])) return;
    this.proc.kill('SIGKILL');
    await Promise.race([gone, sleep(2000)]);
  }
}

/**
 * A free TCP port on 127.0.0.1 below the kernel's ephemeral range, so that the
 * thousands of outgoing sockets of a run cannot take it between this check
 * and the server's listen (startServer still retries if that happens).
 */
function ephemeralLow() {
  try {
    return Number(fs.readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
  } catch {
    return 32768;
  }
}

async function freePort() {
  const high = Math.min(ephemeralLow(), 65536);
  for (let i = 0; i < 50; i++) {
    const port = 10000 + Math.floor(Math.random() * Math.max(1000, high - 10000));
    const isFree = await new Promise((resolve) => {
      const srv = net.createServer();
      srv.once('error', () => resolve(false));
      srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
    });
    if (isFree) return port;
  }
  throw new Error('no free port found below the ephemeral range');
}

function getStatus(url) {
  return new Promise((resolve) => {
    const req = http.get(url, { agent: false }, (res) => {
      res.resume();
      resolve(res.statusCode);
    });
    req.setTimeout(1000, () => req.destroy());
    req.on('error', () => resolve(0));
  });
}

/** The OTLP sink of a traced gateway; stopped with the scenario's other children. */
async function startOtlpSink() {
  const proc = fork(path.join(BENCH, 'otlp-sink.js'), [], {
    env: { ...process.env, PORT: '0' },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  const child = new Child(proc, 'otlp-sink');
  pin(proc.pid, placement.load);
  const port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('otlp sink did not start within 10 s')), 10_000);
    proc.once('message', (m) => {
      clearTimeout(timer);
      resolve(m.port);
    });
    proc.once('exit', () => reject(new Error('otlp sink exited: ' + child.tail)));
  });
  child.url = `http://127.0.0.1:${port}`;
  return child;
}

async function startUpstream() {
  const proc = fork(path.join(BENCH, 'upstream.js'), [], {
    env: { ...process.env, PORT: '0' },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  const child = new Child(proc, 'upstream');
  pin(proc.pid, placement.load);
  const port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('upstream did not start within 10 s')), 10_000);
    proc.once('message', (m) => {
      clearTimeout(timer);
      resolve(m.port);
    });
    proc.once('exit', () => reject(new Error('upstream exited: ' + child.tail)));
  });
  child.url = `http://127.0.0.1:${port}`;
  return child;
}

/**
 * Start the server under test with the probe preloaded and wait until its
 * internal listener answers GET /health/ready with 200. `child.port` and
 * `child.apiPort` are its ports (pass them as `ports` to restart it there).
 */
async function startServer(target, upstreamUrl, extraEnv = {}, ports = null) {
  if (!fs.existsSync(SERVERS[target])) throw new Error(`${SERVERS[target]} is missing: run \`npm run build\` first`);
  for (let attempt = 1; ; attempt++) {
    try {
      return await startServerOnce(target, upstreamUrl, extraEnv, ports);
    } catch (err) {
      if (attempt >= 3 || !/EADDRINUSE/.test(err.message)) throw err;
    }
  }
}

async function startServerOnce(target, upstreamUrl, extraEnv, ports) {
  // `ports` ({port, apiPort}): a node restarted where its clients and the API callers know it (deploy scenario).
  const [port, apiPort] = ports === null ? [await freePort(), await freePort()] : [ports.port, ports.apiPort];
  const otlpEnv =
    tracing.isOn && target === 'gateway'
      ? { OTEL_EXPORTER_OTLP_ENDPOINT: (await startOtlpSink()).url, OTEL_TRACES_SAMPLER: 'always_on' }
      : {};
  const env = { ...process.env };
  for (const key of DROPPED_ENV) delete env[key];
  Object.assign(env, {
    UPSTREAM_URL: upstreamUrl,
    HOST: '127.0.0.1',
    PORT: String(port),
    BACKEND_API_HOST: '127.0.0.1',
    BACKEND_API_PORT: String(apiPort),
    LOG_LEVEL: 'error',
    ...otlpEnv,
    ...extraEnv,
  });
  const proc = fork(SERVERS[target], SERVER_ARGS[target] || [], {
    env,
    execArgv: ['--expose-gc', '-r', PROBE],
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  const child = new Child(proc, target);
  pin(proc.pid, placement.server);
  child.port = port;
  child.apiPort = apiPort;
  child.url = `ws://127.0.0.1:${port}/`;
  child.api = `http://127.0.0.1:${apiPort}`;
  const deadline = Date.now() + 30_000;
  while ((await getStatus(child.api + '/health/ready')) !== 200) {
    if (child.exited)
      throw new Error(`${target} exited at start (${child.exited.code ?? child.exited.signal}):\n${child.tail}`);
    if (Date.now() > deadline) throw new Error(`${target} not ready within 30 s:\n${child.tail}`);
    await sleep(100);
  }
  return child;
}

async function startWorkers(count, file = 'load-worker.js') {
  const workers = [];
  for (let i = 0; i < count; i++) {
    const proc = fork(path.join(BENCH, file), [], {
      env: { ...process.env, BENCH_WORKER_INDEX: String(i) },
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    workers.push(new Child(proc, `load-worker-${i}`));
    pin(proc.pid, placement.load);
  }
  return workers;
}

/** VmRSS of a process, from /proc/<pid>/status (bytes). */
function rssOf(pid) {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)[1]) * 1024;
}

/**
 * The server's memory after two full GCs: RSS from /proc/<pid>/status (the
 * kernel's view), the V8 heap from the probe, and `rssSettled` = RSS minus
 * the resident pages of the (now empty) young generation. V8 grows the young
 * generation to its maximum (32 MiB here) during a burst of allocation, such
 * as opening thousands of connections, and gives the pages back only when its
 * memory reducer happens to run (in tests: after 15-20 s, or not within 40 s);
 * a forced GC does not shrink it. Raw RSS therefore carries up to 32 MiB that
 * measures GC timing, not what the connections hold.
 */
async function memoryOf(server) {
  const v8 = await server.request({ probe: 'mem', gc: true }, 30_000);
  await sleep(500);
  const rss = rssOf(server.pid);
  return {
    rss,
    rssSettled: rss - v8.youngPhysical,
    youngPhysical: v8.youngPhysical,
    heapTotal: v8.heapTotal,
    heapUsed: v8.heapUsed,
    external: v8.external,
    arrayBuffers: v8.arrayBuffers,
    spaces: v8.spaces,
  };
}

/** CPU time (ms) the server spent between two calls: `const t = await cpuOf(s); ...; await t.since()`. */
async function cpuOf(server) {
  const a = await server.request({ probe: 'cpu' }, 10_000);
  const at = performance.now();
  return {
    async since() {
      const b = await server.request({ probe: 'cpu' }, 10_000);
      const cpuMs = (b.user - a.user + b.system - a.system) / 1000;
      return { cpuMs, wallMs: performance.now() - at };
    },
  };
}

async function stopAll() {
  await Promise.all([...live].map((c) => c.stop()));
}

function killAllNow() {
  for (const child of live) {
    try {
      process.kill(child.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

module.exports = {
  ROOT,
  BENCH,
  Child,
  setPlacement,
  setTracing,
  setAgainst,
  dialectOf,
  startUpstream,
  startServer,
  startWorkers,
  memoryOf,
  rssOf,
  cpuOf,
  stopAll,
  killAllNow,
  sleep,
};
