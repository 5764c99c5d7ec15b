'use strict';
// The resume scenario (issue 19, SPEC §12 on one node): the gateway against
// itself, in one run, on two gateway processes of the same build and config.
// Columns: "gateway" = resumable clients (they offer `gateway-resume`, so they
// get positioned message frames and the gateway keeps topic history),
// "baseline" = legacy clients (history is kept only for topics a resumable
// session is subscribed to, so legacy-only topics run with history off).
// The baseline server has no resume: it takes no part here.
//
// Set-up, both stacks side by side (memory is per process):
//   1. idle: N connections, each subscribed to its own topic `user/<user>`;
//      memory per connection as in the idle scenario; then closed with 1000
//      (a goodbye: a resumable session ends at once).
//   2. fanout: M subscribers of `bench/fan` (as the fanout scenario), warm-up.
//   3. R connections for the cost rounds: resumable ones each subscribed to its
//      own topic (a resume restores it); legacy ones without subscription.
//      Both servers so hold as many connections during fan-out.
// Interleaved rounds (an uncounted warm-up round first), each:
//   - fanout afap: after a full GC, publishes as fast as possible, 4 in flight (server CPU measured);
//   - cost: legacy stack: its R connections closed with 1000 (not measured),
//     then R new connections with authorization (as the connect scenario:
//     concurrency per worker, rate from the first upgrade to the last hello).
//     Resumable stack: the R connections are dropped without a close frame,
//     the driver waits until the server counts R more detached sessions
//     (gateway_sessions_detached), then all R resume with their latest token
//     (measured: rate, socket open to resumed hello, server CPU).

const http = require('node:http');
const { memoryOf, sleep } = require('./lib/stack');
const { addCounts } = require('./lib/report');

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? null : s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/** The value of an unlabelled metric in the gateway's /metrics text; null when absent or unreachable. */
function metricOf(apiUrl, name) {
  return new Promise((resolve) => {
    const req = http.get(`${apiUrl}/metrics`, { agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (text += c));
      res.on('end', () => {
        const line = text.split('\n').find((l) => l.startsWith(name + ' '));
        resolve(line === undefined ? null : Number(line.slice(name.length + 1)));
      });
    });
    req.setTimeout(5000, () => req.destroy());
    req.on('error', () => resolve(null));
  });
}

/**
 * Wait (bounded) until the server counts `count` detached sessions (those
 * before the drop included: a connection whose set-up failed was dropped too).
 */
async function untilDetached(stack, count, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  let seen = null;
  while ((seen = await metricOf(stack.server.api, 'gateway_sessions_detached')) !== count) {
    if (Date.now() > deadline)
      throw new Error(
        `${stack.target}: gateway_sessions_detached is ${seen}, expected ${count} within ${timeoutMs} ms of dropping the connections`,
      );
    await sleep(20);
  }
}

/**
 * The cost of a resume against a new connect on one gateway node (SPEC §12.3):
 * the measure of the resume scenario, also run on one node of a cluster by the
 * deploy scenario. `resumable` picks the side: the resumable side opens R
 * connections each subscribed to its own topic (group "res"), drops them
 * without a close frame and resumes them all with their latest token; the
 * legacy side (group "conn") closes its R connections with 1000 and opens R
 * new ones (with authorization). `stack.server` is the node measured.
 */
function resumeCost({ openAll, measured, latency }) {
  const all = (workers, msg, timeoutMs) => Promise.all(workers.map((w) => w.request(msg, timeoutMs)));
  return {
    /** The R connections of one side, before the rounds. */
    open(stack, cfg, opts, resumable) {
      return resumable
        ? openAll(
            stack,
            cfg.resumes.perRound,
            { topic: 'user/{user}', userPrefix: 'r', group: 'res', resumable: true },
            opts,
          )
        : openAll(stack, cfg.resumes.perRound, { userPrefix: 'cs', group: 'conn' }, opts);
    },

    /** One measured round: R resumes, or R new connects. `r` names the new users of the legacy side. */
    async round(stack, cfg, opts, r, resumable) {
      const costOpts = { ...opts, openConcurrency: cfg.resumes.concurrency };
      if (resumable) {
        const detachedBefore = await metricOf(stack.server.api, 'gateway_sessions_detached');
        const dropped = await all(stack.workers, { cmd: 'drop', group: 'res' }, 10_000);
        await untilDetached(stack, detachedBefore + dropped.reduce((s, d) => s + d.dropped, 0), 10_000);
        return measured(stack, () => openAll(stack, cfg.resumes.perRound, { cmd: 'resume', group: 'res' }, costOpts));
      }
      await all(stack.workers, { cmd: 'goodbye', group: 'conn', code: 1000, timeoutMs: 30_000 }, 40_000);
      return measured(stack, () =>
        openAll(stack, cfg.resumes.perRound, { userPrefix: `c${r}x`, group: 'conn' }, costOpts),
      );
    },

    summarize(costs) {
      const lat = latency(costs.flatMap((c) => c.helloMs));
      return {
        perSec: median(costs.map((c) => c.helloPerSec)),
        perSecRounds: costs.map((c) => Math.round(c.helloPerSec)),
        done: costs.reduce((s, c) => s + c.opened, 0),
        failed: costs.reduce((s, c) => s + c.failed, 0),
        whys: addCounts(costs.map((c) => c.whys)),
        p50: lat.p50,
        p99: lat.p99,
        serverCpuPct: median(costs.map((c) => c.serverCpuPct)),
        serverCpuUsPerOp: median(costs.map((c) => (1000 * c.serverCpuMs) / c.opened)),
      };
    },

    /** Rows of `cost` (summarize's) with `open` (the R connections' set-up): gateway = resumes, baseline = connects. */
    rows(add, what) {
      add(`resumes vs connects + auth${what}`, '/s', (x) => x.cost.perSec, { op: '>=', value: 3 });
      add('resumed hello vs hello p50', 'ms', (x) => x.cost.p50);
      add('resumed hello vs hello p99', 'ms', (x) => x.cost.p99);
      add(`server CPU per resume vs per connect${what}`, 'µs', (x) => x.cost.serverCpuUsPerOp);
      add('failed resumes / connects', '', (x) => x.cost.failed + x.resOpen.failed, { op: '==0' });
    },
  };
}

function resumeScenario({
  openAll,
  postMany,
  deliveryRound,
  measured,
  summarizeDelivery,
  publishBody,
  startStack,
  latency,
}) {
  const all = (workers, msg, timeoutMs) => Promise.all(workers.map((w) => w.request(msg, timeoutMs)));
  const isResumable = (stack) => stack.target === 'gateway';
  const strip = ({ helloMs: _, ...rest }) => rest;
  const cost = resumeCost({ openAll, measured, latency });

  async function idleMemory(stack, cfg, opts) {
    await sleep(1000);
    const before = await memoryOf(stack.server);
    const open = await openAll(
      stack,
      cfg.idle.n,
      { topic: 'user/{user}', userPrefix: 'i', group: 'idle', resumable: isResumable(stack) },
      opts,
    );
    await sleep(1000);
    const after = await memoryOf(stack.server);
    const n = open.opened;
    await all(stack.workers, { cmd: 'goodbye', group: 'idle', code: 1000, timeoutMs: 30_000 }, 40_000);
    return {
      n,
      failed: open.failed,
      rssSettledPerConn: (after.rssSettled - before.rssSettled) / n,
      rssPerConn: (after.rss - before.rss) / n,
      heapPerConn: (after.heapUsed - before.heapUsed) / n,
    };
  }

  return {
    // "floor": the bare handshake (bench/baseline/handshake-floor.js), new connects only: the
    // most a resume could gain over a connect here (SPEC §12.3's ≥ 3× target is checked against it).
    targets: ['baseline', 'gateway', 'floor'],
    isSetupParallel: true,

    async startStack(target, opts) {
      if (target === 'floor') return startStack('floor', opts);
      // Both columns run the gateway (same build, same config); only the clients differ.
      const stack = await startStack('gateway', opts);
      stack.server.name = isResumable({ target }) ? 'gateway-resumable' : 'gateway-legacy'; // tells the --cpu-prof files apart
      return { ...stack, target };
    },

    async setup(stack, cfg, opts) {
      if (stack.target === 'floor') return { resOpen: strip(await cost.open(stack, cfg, opts, false)) };
      const idle = await idleMemory(stack, cfg, opts);
      const fanOpen = await openAll(stack, cfg.fanout.n, { topic: 'bench/fan', resumable: isResumable(stack) }, opts);
      const url = `${stack.server.api}/v1/publish/bench/fan`;
      await sleep(300);
      await deliveryRound(stack, opts, cfg.fanout.warmup, true, () =>
        postMany(url, cfg.fanout.warmup, cfg.fanout.afap.inflight, null, publishBody),
      );
      // R connections on both sides, so both servers hold as many during fan-out: those the
      // resumable side will drop and resume, those the legacy side will replace by new ones.
      const resOpen = await cost.open(stack, cfg, opts, isResumable(stack));
      return { idle, fanOpen: strip(fanOpen), resOpen: strip(resOpen), url };
    },

    rounds: (cfg) => cfg.rounds,

    async round(stack, cfg, opts, state, r) {
      if (stack.target === 'floor') return { cost: await cost.round(stack, cfg, opts, r, false) };
      const count = Math.ceil(cfg.fanout.afap.count / cfg.rounds);
      // A full GC first: the garbage of the previous round's handshakes (this stack ran last) is not billed to fan-out.
      await stack.server.request({ probe: 'mem', gc: true }, 30_000);
      const afap = await measured(stack, () =>
        deliveryRound(stack, opts, count, true, () =>
          postMany(state.url, count, cfg.fanout.afap.inflight, null, publishBody),
        ),
      );
      return { afap, cost: await cost.round(stack, cfg, opts, r, isResumable(stack)) };
    },

    summarize(state, rs) {
      if (rs.length > 0 && rs[0].afap === undefined)
        return { resOpen: state.resOpen, cost: cost.summarize(rs.map((r) => r.cost)) };
      return {
        idle: state.idle,
        fanOpen: state.fanOpen,
        resOpen: state.resOpen,
        afap: summarizeDelivery(rs.map((r) => r.afap)),
        cost: cost.summarize(rs.map((r) => r.cost)),
      };
    },

    /** Table rows: "gateway" = resumable clients / resumes, "baseline" = legacy clients / new connects, both on the gateway. */
    rows(label, res, row) {
      const g = res.gateway;
      const b = res.baseline;
      const out = [];
      const add = (metric, unit, f, target) => out.push(row(label, metric, unit, g && f(g), b && f(b), target));
      add('afap delivered (resumable vs legacy subscribers)', 'msg/s', (x) => x.afap.deliveredPerSec, {
        op: '>=',
        value: 0.9,
      });
      add('afap publishes', '/s', (x) => x.afap.sendsPerSec);
      add('afap p50', 'ms', (x) => x.afap.p50);
      add('afap p99', 'ms', (x) => x.afap.p99);
      add('afap server CPU per msg', 'µs', (x) => x.afap.serverCpuUsPerFrame);
      add('fanout losses', 'msgs', (x) => x.afap.losses + x.afap.duplicates + x.fanOpen.failed, { op: '==0' });
      add(
        'idle RSS per conn, empty young gen excluded (resumable vs legacy)',
        'KiB',
        (x) => x.idle.rssSettledPerConn / 1024,
        { op: '<=', value: 1.1 },
      );
      add('idle raw RSS per connection', 'KiB', (x) => x.idle.rssPerConn / 1024);
      add('idle heap used per connection', 'KiB', (x) => x.idle.heapPerConn / 1024);
      add('idle failed connections', '', (x) => x.idle.failed, { op: '==0' });
      cost.rows(add, '');
      if (res.floor && b) {
        // One ceiling for both columns: the bare handshake's connects/s, and how far above new connects it lies.
        const f = res.floor.cost;
        out.push({
          ...row(label, 'handshake floor connects (bare ws, no auth)', '/s', f.perSec, f.perSec),
          ratio: null,
          target: '(ceiling)',
        });
        out.push({
          ...row(label, 'handshake floor CPU per connect', 'µs', f.serverCpuUsPerOp, f.serverCpuUsPerOp),
          ratio: null,
          target: '(ceiling)',
        });
        const most = f.perSec / b.cost.perSec;
        out.push({
          ...row(label, 'most a resume can gain: floor ÷ connects + auth', '×', most, most),
          ratio: null,
          target: '(ceiling)',
        });
      }
      return out;
    },
  };
}

module.exports = { resumeScenario, resumeCost, metricOf };
