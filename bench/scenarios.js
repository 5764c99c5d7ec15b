'use strict';
// The five scenarios. A scenario brings up one stack per target (baseline,
// gateway and, for rpc, the upstream alone as "limit"), each with its own
// upstream, server and load workers, sets them up, then runs its measurement
// rounds INTERLEAVED (B G, G B, B G, ...) so that noise from a busy 2-core
// machine hits both servers alike. Figures are the median round (rates) or
// pooled samples (latencies); `rows()` turns them into table rows.

const http = require('node:http');
const path = require('node:path');
const { startUpstream, startServer, startWorkers, memoryOf, cpuOf, sleep, dialectOf } = require('./lib/stack');
const { checkSocketIo } = require('./lib/socketio-check');
const { latency, row, addCounts } = require('./lib/report');
const { httpStatus } = require('./lib/worker');
const { api, apiRows } = require('./api-scenario');
const { compareTopologies, topologyRows } = require('./redis-shards');

const now = () => performance.timeOrigin + performance.now();
const PAD = 'p'.repeat(56); // makes a published JSON body of ~100 bytes
const SAMPLES_WANTED = 20_000; // latency samples per round (1 in K frames is parsed)
const UPSTREAM_SOCKETS = 100; // both servers' keep-alive pool size (the gateway's UPSTREAM_MAX_SOCKETS default)
let ipBase = 0; // a fresh 127.<ipBase>.x.y source range per stack: no port reuse across stacks

// ---- plumbing ---------------------------------------------------------------

async function startStack(target, opts, def = {}) {
  const stack = {
    target,
    upstream: await startUpstream(),
    server: null,
    workers: [],
    ipBase: (ipBase = (ipBase % 250) + 1),
    dialect: dialectOf(target),
  };
  try {
    if (target !== 'limit') stack.server = await startServer(target, stack.upstream.url);
    if (stack.dialect === 'socketio') await checkSocketIo(stack.server);
    stack.workers = await startWorkers(def.workers || opts.workers, def.workerFile);
  } catch (err) {
    await stopStack(stack);
    throw err;
  }
  return stack;
}

async function stopStack(stack) {
  await Promise.allSettled(stack.workers.map((w) => w.request({ cmd: 'close' }, 10_000)));
  await Promise.allSettled(
    [...stack.workers, ...(stack.nodes ?? [stack.server]), stack.upstream, stack.redis]
      .filter(Boolean)
      .map((c) => c.stop()),
  );
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? null : s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/**
 * Run scenario `def` on every target: start all stacks, set each up, then
 * `rounds` interleaved measurement rounds. With --cpu-prof both servers are
 * CPU-profiled over all the rounds (idle gaps are excluded from the summary).
 */
async function runScenario(def, targets, cfg, opts) {
  const stacks = {};
  const state = {};
  const rounds = {};
  const log = (s) => process.stdout.write(s);
  try {
    if (def.isSetupParallel) {
      // Idle measures memory, which is per process: the two set-ups run side by side to save time.
      const t0 = Date.now();
      log(`  ${cfg.label} · ${targets.join(' + ')} side by side … `);
      await Promise.all(
        targets.map(
          async (t) => (stacks[t] = await (def.startStack ? def.startStack(t, opts) : startStack(t, opts, def))),
        ),
      );
      await Promise.all(targets.map(async (t) => (state[t] = await def.setup(stacks[t], cfg, opts))));
      log(`${((Date.now() - t0) / 1000).toFixed(1)} s\n`);
    }
    for (const t of targets) {
      rounds[t] = [];
      if (def.isSetupParallel) continue;
      const t0 = Date.now();
      log(`  ${cfg.label} · ${t} setup … `);
      stacks[t] = await (def.startStack ? def.startStack(t, opts) : startStack(t, opts, def));
      state[t] = await def.setup(stacks[t], cfg, opts);
      log(`${((Date.now() - t0) / 1000).toFixed(1)} s\n`);
    }
    const n = def.rounds ? def.rounds(cfg, opts) : 0;
    const profiled =
      opts.profileDir && n > 0
        ? Object.values(stacks)
            .filter((s) => s.server !== null)
            .map((s) => s.server)
        : [];
    for (const server of profiled) await server.request({ probe: 'prof-start' }, 10_000);
    if (n > 0) log(`  ${cfg.label} · 1 + ${n} interleaved rounds … `);
    const t0 = Date.now();
    // Round 0 warms every process up (JIT, pools, caches) and is not counted.
    for (let r = 0; r <= n && n > 0; r++) {
      const order = r % 2 === 0 ? targets : [...targets].reverse();
      for (const t of order) {
        const result = await measured(stacks[t], () => def.round(stacks[t], cfg, opts, state[t], r));
        if (r > 0) rounds[t].push(result);
      }
    }
    if (n > 0) log(`${((Date.now() - t0) / 1000).toFixed(1)} s\n`);
    for (const server of profiled) {
      const file = path.join(opts.profileDir, `${cfg.label.replace(/\W+/g, '-')}-${server.name}.cpuprofile`);
      await server.request({ probe: 'prof-stop', file }, 60_000);
      opts.profiles.push({ label: `${cfg.label} ${server.name}`, file });
    }
    const out = {};
    for (const t of targets) out[t] = def.summarize(state[t], rounds[t], t);
    return out;
  } finally {
    await Promise.allSettled(Object.values(stacks).map(stopStack));
  }
}

/** Run `fn` while measuring the server's CPU time (% of one CPU): every node of a cluster stack, and its Redis. */
async function measured(stack, fn) {
  if (stack.server === null) return fn();
  const cpus = await Promise.all((stack.nodes ?? [stack.server]).map(cpuOf));
  const redisAt = stack.redis ? stack.redis.cpuMs() : 0;
  const result = await fn();
  const used = await Promise.all(cpus.map((cpu) => cpu.since()));
  const cpuMs = used.reduce((sum, u) => sum + u.cpuMs, 0) + (stack.redis ? stack.redis.cpuMs() - redisAt : 0);
  result.serverCpuPct = (100 * cpuMs) / used[0].wallMs;
  result.serverCpuMs = cpuMs;
  return result;
}

const all = (workers, msg, timeoutMs) => Promise.all(workers.map((w) => w.request(msg, timeoutMs)));
const split = (total, parts) =>
  Array.from({ length: parts }, (_, i) => Math.floor(total / parts) + (i < total % parts ? 1 : 0));

/**
 * Open `count` connections spread over the workers; each waits for hello, then subscribes as asked.
 * `extra.cmd: 'resume'` resumes instead the connections each worker dropped (see load-worker.js).
 */
async function openAll(stack, count, extra, opts) {
  const { workers, server } = stack;
  let offset = extra.offset || 0;
  const results = await Promise.all(
    split(count, workers.length).map((n, i) => {
      const msg = {
        cmd: 'open',
        url: server.url,
        api: server.api,
        count: n,
        offset,
        concurrency: opts.openConcurrency,
        ipBase: stack.ipBase,
        timeoutMs: 30_000,
        userPrefix: 'u',
        dialect: stack.dialect,
        ...extra,
      };
      offset += n;
      return workers[i].request(msg, opts.openTimeoutMs);
    }),
  );
  const failed = results.reduce((s, r) => s + r.failed, 0);
  const whys = addCounts(results.map((r) => r.whys));
  const firstAt = Math.min(...results.map((r) => r.firstAt));
  const lastHelloAt = Math.max(...results.map((r) => r.lastHelloAt));
  const lastReadyAt = Math.max(...results.map((r) => r.lastReadyAt));
  const opened = results.reduce((s, r) => s + r.opened, 0);
  if (failed > 0)
    process.stdout.write(
      `\n    ! ${stack.target}: ${failed} of ${opened + failed} connections failed to ${extra.cmd || 'open'}: ${JSON.stringify(whys)}\n`,
    );
  return {
    opened,
    failed,
    whys,
    helloPerSec: (1000 * opened) / (lastHelloAt - firstAt),
    readyMs: lastReadyAt - firstAt,
    helloMs: results.flatMap((r) => r.helloMs),
  };
}

/** POST `count` bodies to `url` with at most `inflight` at once (one lane each), paced at `rate`/s when given. */
async function postMany(url, count, inflight, rate, bodyOf) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: inflight });
  let next = 0;
  let errors = 0;
  const firstAt = now();
  const lane = async (_, laneIndex) => {
    while (next < count) {
      const i = next++;
      if (rate) {
        const wait = firstAt + (i * 1000) / rate - now();
        if (wait > 1) await sleep(wait);
      }
      if ((await httpStatus(agent, 'POST', url, bodyOf(i, laneIndex))) !== 204) errors++;
    }
  };
  await Promise.all(Array.from({ length: inflight }, lane));
  const lastAckAt = now();
  agent.destroy();
  return { firstAt, lastAckAt, errors };
}

/** Expect `perConn` frames on every connection, run `send`, wait for them all (bounded), add it up. */
async function deliveryRound(stack, opts, perConn, hasTimestamps, send) {
  const counts = await all(stack.workers, { cmd: 'expect', perConn, sampleEvery: 0 }, 10_000);
  const total = counts.reduce((s, c) => s + c.expectedTotal, 0);
  const sampleEvery = hasTimestamps ? Math.max(1, Math.ceil(total / SAMPLES_WANTED)) : 0;
  await all(stack.workers, { cmd: 'expect', perConn, sampleEvery }, 10_000);
  const sent = await send();
  const waits = await all(
    stack.workers,
    { cmd: 'wait', timeoutMs: opts.deliveryTimeoutMs },
    opts.deliveryTimeoutMs + 10_000,
  );
  const received = waits.reduce((s, w) => s + w.received, 0);
  const lastAt = Math.max(...waits.map((w) => w.lastAt));
  return {
    sends: perConn,
    sendsPerSec: (1000 * perConn) / (sent.lastAckAt - sent.firstAt),
    expected: total,
    received,
    deliveredPerSec: (1000 * received) / (lastAt - sent.firstAt),
    losses: waits.reduce((s, w) => s + w.short + w.unexpectedCloses, 0) + sent.errors,
    duplicates: waits.reduce((s, w) => s + w.extra, 0),
    samples: waits.flatMap((w) => w.samples),
    samplesByWorker: waits.map((w) => w.samples),
  };
}

/** Median rate, pooled latency samples, summed losses over delivery rounds. */
function summarizeDelivery(rs) {
  const lat = latency(rs.flatMap((r) => r.samples));
  return {
    rounds: rs.length,
    deliveredPerSec: median(rs.map((r) => r.deliveredPerSec)),
    sendsPerSec: median(rs.map((r) => r.sendsPerSec)),
    deliveredPerSecRounds: rs.map((r) => Math.round(r.deliveredPerSec)),
    p50: lat.p50,
    p99: lat.p99,
    samples: lat.n,
    losses: rs.reduce((s, r) => s + r.losses, 0),
    duplicates: rs.reduce((s, r) => s + r.duplicates, 0),
    serverCpuPct: median(rs.map((r) => r.serverCpuPct)),
    serverCpuUsPerFrame: median(rs.map((r) => (1000 * r.serverCpuMs) / r.received)),
  };
}

const publishBody = (i) => `{"t":${now().toFixed(3)},"seq":${i},"pad":"${PAD}"}`;

// ---- scenarios --------------------------------------------------------------

const fanout = {
  async setup(stack, cfg, opts) {
    const open = await openAll(stack, cfg.n, { topic: 'bench/fan' }, opts);
    const url = `${stack.server.api}/v1/publish/bench/fan`;
    await sleep(300);
    await deliveryRound(stack, opts, cfg.warmup, true, () =>
      postMany(url, cfg.warmup, cfg.afap.inflight, null, publishBody),
    );
    return { open, url };
  },
  rounds: (cfg) => cfg.rounds,
  async round(stack, cfg, opts, state) {
    const pacedCount = Math.ceil(cfg.paced.count / cfg.rounds);
    const afapCount = Math.ceil(cfg.afap.count / cfg.rounds);
    const paced = await deliveryRound(stack, opts, pacedCount, true, () =>
      postMany(state.url, pacedCount, 16, cfg.paced.rate, publishBody),
    );
    const afap = await measured(stack, () =>
      deliveryRound(stack, opts, afapCount, true, () =>
        postMany(state.url, afapCount, cfg.afap.inflight, null, publishBody),
      ),
    );
    return { paced, afap };
  },
  summarize(state, rs) {
    return {
      n: state.open.opened,
      open: strip(state.open),
      paced: summarizeDelivery(rs.map((r) => r.paced)),
      afap: summarizeDelivery(rs.map((r) => r.afap)),
    };
  },
};

function rpcFigures(parts) {
  const calls = parts.reduce((s, p) => s + p.calls, 0);
  const elapsedMs = parts.reduce((s, p) => s + p.elapsedMs, 0) / parts.length;
  return {
    calls,
    callsPerSec: (1000 * calls) / elapsedMs,
    errors: parts.reduce((s, p) => s + p.errors, 0),
    lost: parts.reduce((s, p) => s + p.lost, 0),
    samples: parts.flatMap((p) => p.samples),
  };
}

const rpc = {
  async setup(stack, cfg, opts) {
    if (stack.target === 'limit') {
      const identity = JSON.stringify({ user_id: 'u12', cid: 'n0000000AbCdEfGhIjKlMnOpQrStUv' });
      const authorization = 'Gateway+json ' + Buffer.from(identity).toString('base64');
      await rpc.call(stack, cfg, { authorization }, 1, cfg.warmupMs);
      return { authorization, open: { failed: 0 } };
    }
    const open = await openAll(stack, cfg.connections, {}, opts);
    await rpc.call(stack, cfg, {}, cfg.inflights[cfg.inflights.length - 1], cfg.warmupMs);
    return { open };
  },
  /** One closed-loop run of `durationMs` with `inflight` calls per connection (for "limit": the same total straight to the upstream). */
  async call(stack, cfg, state, inflight, durationMs) {
    if (stack.target !== 'limit')
      return rpcFigures(
        await all(stack.workers, { cmd: 'rpc', inflight, sampleEvery: 4, durationMs }, durationMs + 30_000),
      );
    const per = split(cfg.connections * inflight, stack.workers.length);
    // The same number of upstream sockets as the servers' pools, shared by the workers.
    const sockets = split(Math.min(cfg.connections * inflight, UPSTREAM_SOCKETS), stack.workers.length);
    const msg = {
      cmd: 'direct',
      url: stack.upstream.url,
      durationMs,
      authorization: state.authorization,
      sampleEvery: 4,
    };
    return rpcFigures(
      await Promise.all(
        stack.workers.map((w, i) =>
          w.request({ ...msg, inflight: per[i], maxSockets: sockets[i] }, durationMs + 30_000),
        ),
      ),
    );
  },
  rounds: (cfg) => cfg.rounds,
  async round(stack, cfg, opts, state) {
    const out = {};
    for (const k of cfg.inflights)
      out[`x${k}`] = await measured(stack, () => rpc.call(stack, cfg, state, k, cfg.durationMs / cfg.rounds));
    return out;
  },
  summarize(state, rs) {
    const out = { open: strip(state.open) };
    for (const key of Object.keys(rs[0]).filter((k) => /^x\d+$/.test(k))) {
      const parts = rs.map((r) => r[key]);
      const lat = latency(parts.flatMap((p) => p.samples));
      out[key] = {
        callsPerSec: median(parts.map((p) => p.callsPerSec)),
        callsPerSecRounds: parts.map((p) => Math.round(p.callsPerSec)),
        p50: lat.p50,
        p99: lat.p99,
        samples: lat.n,
        errors: parts.reduce((s, p) => s + p.errors, 0),
        lost: parts.reduce((s, p) => s + p.lost, 0),
        serverCpuPct: median(parts.map((p) => p.serverCpuPct ?? null)),
        serverCpuUsPerCall: median(
          parts.map((p) => (p.serverCpuMs === undefined ? null : (1000 * p.serverCpuMs) / p.calls)),
        ),
      };
    }
    return out;
  },
};

const idle = {
  isSetupParallel: true,
  async setup(stack, cfg, opts) {
    const snapshot = async (when) => {
      const file = path.join(opts.profileDir, `${cfg.label.replace(/\W+/g, '-')}-${stack.target}-${when}.heapsnapshot`);
      await stack.server.request({ probe: 'heap-snapshot', file }, 120_000);
      return file;
    };
    await sleep(1000);
    const before = await memoryOf(stack.server);
    const beforeFile = opts.profileDir ? await snapshot('before') : null;
    const open = await openAll(stack, cfg.n, { topic: 'user/{user}' }, opts);
    await sleep(1000);
    const after = await memoryOf(stack.server);
    const n = open.opened;
    if (beforeFile !== null)
      opts.heapSnapshots.push({
        label: `${cfg.label} ${stack.target}`,
        before: beforeFile,
        file: await snapshot('after'),
        connections: n,
      });
    return {
      n,
      open: strip(open),
      before,
      after,
      rssBefore: before.rss,
      rssAfter: after.rss,
      heapBefore: before.heapUsed,
      heapAfter: after.heapUsed,
      rssPerConn: (after.rss - before.rss) / n,
      rssSettledPerConn: (after.rssSettled - before.rssSettled) / n,
      heapPerConn: (after.heapUsed - before.heapUsed) / n,
      externalPerConn: (after.external - before.external) / n,
      // Old-space pages kept but empty after the full GC: fragmentation left by garbage promoted while connecting.
      oldFreePerConn: after.spaces && before.spaces ? (oldFree(after) - oldFree(before)) / n : null,
      losses: open.failed,
    };
  },
  summarize: (state) => state,
};

const connect = {
  async setup(stack, cfg, opts) {
    await openAll(stack, cfg.warmup, { userPrefix: 'w' }, opts);
    return {};
  },
  rounds: (cfg) => cfg.rounds,
  async round(stack, cfg, opts, state, r) {
    const count = Math.ceil(cfg.count / cfg.rounds);
    // A connect is the authorization with the user's topic subscribed in its answer (SPEC §15.1), as Socket.IO's
    // bench connect joins the user's room (baseline/socketio.js); the floor ignores the query.
    const extra = { userPrefix: `c${r}x`, subscribeInAuth: 'user/{user}' };
    return openAll(stack, count, extra, { ...opts, openConcurrency: cfg.concurrency });
  },
  summarize(state, rs) {
    const lat = latency(rs.flatMap((r) => r.helloMs));
    return {
      helloPerSec: median(rs.map((r) => r.helloPerSec)),
      helloPerSecRounds: rs.map((r) => Math.round(r.helloPerSec)),
      opened: rs.reduce((s, r) => s + r.opened, 0),
      failed: rs.reduce((s, r) => s + r.failed, 0),
      helloP50: lat.p50,
      helloP99: lat.p99,
      serverCpuPct: median(rs.map((r) => r.serverCpuPct)),
      serverCpuUsPerConn: median(rs.map((r) => (1000 * r.serverCpuMs) / r.opened)),
    };
  },
};

const lattice = {
  async setup(stack, cfg, opts) {
    const spec = {
      namespace: 'bench/rooms',
      shared: { room: { msg_counter: 0 } },
      private: { room: { seen_counter: 1 } },
    };
    const open = await openAll(stack, cfg.n, { lattice: spec }, opts);
    // One counter per publishing lane: a lane's updates are sequential, so each one grows its
    // counter and reaches every subscriber (with one shared counter, concurrent updates could
    // arrive out of order, and a smaller value is rightly no change).
    const counters = new Array(cfg.inflight).fill(0);
    const state = {
      open,
      url: `${stack.server.api}/v1/lattice/bench/rooms`,
      body: (_, lane) => `{"shared":{"room":{"lane${lane}_counter":${++counters[lane]}}}}`,
    };
    await sleep(300);
    await deliveryRound(stack, opts, cfg.warmup, false, () =>
      postMany(state.url, cfg.warmup, cfg.inflight, null, state.body),
    );
    return state;
  },
  rounds: (cfg) => cfg.rounds,
  async round(stack, cfg, opts, state) {
    const count = Math.ceil(cfg.updates / cfg.rounds);
    return deliveryRound(stack, opts, count, false, () => postMany(state.url, count, cfg.inflight, null, state.body));
  },
  summarize(state, rs) {
    return { n: state.open.opened, open: strip(state.open), updates: summarizeDelivery(rs) };
  },
};

function oldFree(memory) {
  const old = memory.spaces.old_space;
  return old ? old.physical - old.used : 0;
}

/** Drop the raw per-connection samples before results go to JSON. */
function strip(open) {
  const { helloMs: _, ...rest } = open;
  return rest;
}

// ---- rows ---------------------------------------------------------------------

const pick = (r, f) => (r === undefined ? undefined : f(r));

function rows(name, label, res) {
  const g = res.gateway;
  const b = res.baseline;
  const out = [];
  const add = (metric, unit, f, target) => out.push(row(label, metric, unit, pick(g, f), pick(b, f), target));
  switch (name) {
    case 'api':
      return apiRows(label, res);
    case 'fanout':
      add('paced delivered', 'msg/s', (r) => r.paced.deliveredPerSec);
      add('paced p50', 'ms', (r) => r.paced.p50);
      add('paced p99', 'ms', (r) => r.paced.p99);
      add('afap delivered', 'msg/s', (r) => r.afap.deliveredPerSec, { op: '>=', value: 0.9 });
      add('afap publishes', '/s', (r) => r.afap.sendsPerSec);
      add('afap p50', 'ms', (r) => r.afap.p50);
      add('afap p99', 'ms', (r) => r.afap.p99);
      add(
        'losses',
        'msgs',
        (r) => r.paced.losses + r.afap.losses + r.paced.duplicates + r.afap.duplicates + r.open.failed,
        { op: '==0' },
      );
      add('server CPU afap', '%', (r) => r.afap.serverCpuPct);
      add('server CPU per msg afap', 'µs', (r) => r.afap.serverCpuUsPerFrame);
      break;
    case 'rpc':
      for (const key of Object.keys(g || b).filter((k) => /^x\d+$/.test(k))) {
        add(`${key} calls`, '/s', (r) => r[key].callsPerSec, { op: '>=', value: 0.8 });
        add(`${key} p50`, 'ms', (r) => r[key].p50);
        add(`${key} p99`, 'ms', (r) => r[key].p99, { op: '<=', value: 1.5 });
        add(`${key} errors+lost`, 'calls', (r) => r[key].errors + r[key].lost + r.open.failed, { op: '==0' });
        add(`${key} server CPU`, '%', (r) => r[key].serverCpuPct);
        add(`${key} server CPU per call`, 'µs', (r) => r[key].serverCpuUsPerCall);
        if (res.limit) {
          // The upstream hit directly: one ceiling shared by both servers, shown in both columns.
          const l = res.limit[key];
          for (const [metric, unit, v] of [
            ['calls', '/s', l.callsPerSec],
            ['p50', 'ms', l.p50],
            ['p99', 'ms', l.p99],
          ]) {
            out.push({
              ...row(label, `${key} limit (upstream direct) ${metric}`, unit, v, v),
              ratio: null,
              target: '(ceiling)',
            });
          }
        }
      }
      break;
    case 'idle':
      add('RSS per conn, empty young gen excluded', 'KiB', (r) => r.rssSettledPerConn / 1024, { op: '<=', value: 1.5 });
      add('raw RSS per connection', 'KiB', (r) => r.rssPerConn / 1024);
      add('heap used per connection', 'KiB', (r) => r.heapPerConn / 1024);
      {
        // A diagnostic, no ratio: the baseline's figure is near 0, so a ratio would only be noise.
        const free = (r) => (r.oldFreePerConn === null ? null : r.oldFreePerConn / 1024);
        out.push({
          ...row(label, 'old space free after GC per conn', 'KiB', pick(g, free), pick(b, free)),
          ratio: null,
        });
      }
      add('RSS total', 'MiB', (r) => r.rssAfter / 1048576);
      add('open + subscribe', 'conn/s', (r) => (1000 * r.n) / r.open.readyMs);
      add('failed connections', '', (r) => r.losses, { op: '==0' });
      break;
    case 'connect':
      add('connect + auth', 'conn/s', (r) => r.helloPerSec, { op: '>=', value: 0.8 });
      add('hello p50', 'ms', (r) => r.helloP50);
      add('hello p99', 'ms', (r) => r.helloP99);
      add('failed connections', '', (r) => r.failed, { op: '==0' });
      add('server CPU', '%', (r) => r.serverCpuPct);
      add('server CPU per connection', 'µs', (r) => r.serverCpuUsPerConn);
      break;
    case 'cluster':
    case 'resume':
    case 'deploy':
      out.push(...DEFS[name].rows(label, res, row));
      break;
    case 'redis':
      return topologyRows(label, res, row);
    case 'lattice':
      add('updates', '/s', (r) => r.updates.sendsPerSec);
      add('frames delivered', '/s', (r) => r.updates.deliveredPerSec);
      add('losses', 'frames', (r) => r.updates.losses + r.updates.duplicates + r.open.failed, { op: '==0' });
      add('server CPU', '%', (r) => r.updates.serverCpuPct);
      add('server CPU per frame', 'µs', (r) => r.updates.serverCpuUsPerFrame);
      break;
  }
  return out;
}

const helpers = { openAll, postMany, deliveryRound, measured, summarizeDelivery, publishBody, startStack, latency };
const DEFS = {
  fanout,
  rpc,
  idle,
  connect,
  lattice,
  api,
  cluster: require('./cluster-scenario').clusterScenario(helpers),
  resume: require('./resume-scenario').resumeScenario(helpers),
  deploy: require('./deploy-scenario').deployScenario(helpers),
};

/**
 * Run scenario `name` with config `cfg` on the baseline and the gateway (and
 * the upstream alone for rpc). For `cluster` the two columns are one gateway
 * node ("baseline") and two nodes on Redis ("gateway"); for `resume`, legacy
 * clients ("baseline") and resumable ones ("gateway"), both on the gateway;
 * `deploy` runs one target, a 3-node cluster (its resume cost rows put new
 * connects in the baseline column).
 */
function run(name, cfg, opts) {
  // Its own processes: two gateway nodes on one Redis, three shards and a Redis Cluster (bench/redis-shards.js).
  if (name === 'redis')
    return compareTopologies(cfg).then((res) => ({ ...res, gateway: res.shards, baseline: res.one }));
  const targets = DEFS[name].targets || (name === 'rpc' ? ['baseline', 'gateway', 'limit'] : ['baseline', 'gateway']);
  return runScenario(DEFS[name], targets, cfg, opts);
}

module.exports = { run, rows };
