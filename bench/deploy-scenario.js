'use strict';
// The deploy scenario (issue 19, SPEC §12 in cluster mode): a rolling restart
// of a 3-node cluster under resumable clients, measured from outside.
//
// Stack: a dedicated redis-server, the bench upstream (it counts the
// authorization requests it gets), 3 gateway nodes on it (NODE_ID deploy1..3),
// the deploy clients (deploy-worker.js) and the usual load workers (for the
// resume cost, below).
//
// Set-up (the deploy itself, once):
//   1. C resumable clients (`gateway-resume`), user d<i>, each subscribed through
//      /v1 to topic deploy/t<i mod T>, spread over the 3 nodes; a watcher
//      subscribed to the gateway.user lattice of every client's user.
//   2. A publisher POSTs /v1/publish/deploy/t<k> round-robin over the topics at
//      a steady rate, through the nodes in turn (never through one about to
//      stop); each payload carries its topic's sequence number, so each client
//      counts what it lost or got twice.
//   3. Rolling restart, node by node: SIGTERM, wait for its exit, start it again
//      with the same NODE_ID and ports, wait until /health/ready is 200, next.
//      Clients reconnect to another node (deploy-worker.js), resuming when
//      they hold a token.
//   4. Once every client is connected again (bounded), the publisher goes on
//      for a moment, stops, and the clients report (bounded wait for the last
//      messages): losses, duplicates, reconnects resumed, resume latency,
//      `offline` statuses the watcher saw; the upstream's authorization
//      requests from the first SIGTERM to the end are the deploy's.
// Rounds (after the deploy): the resume scenario's cost measure (resume-scenario.js
// resumeCost) on node 1 of this cluster: R resumes against R new connects with
// authorization, alternating, CPU of node 1 plus Redis.

const http = require('node:http');
const { startServer, startWorkers, sleep } = require('./lib/stack');
const { startRedis } = require('./cluster-scenario');
const { resumeCost } = require('./resume-scenario');
const { httpStatus, now } = require('./lib/worker');
const { addCounts } = require('./lib/report');

const NODES = 3;
const DEPLOY_WORKERS = 2;
const all = (workers, msg, timeoutMs) => Promise.all(workers.map((w) => w.request(msg, timeoutMs)));
const sum = (xs, f) => xs.reduce((s, x) => s + f(x), 0);

/**
 * The steady publisher: `rate` publishes/s round-robin over `topics` topics,
 * each through the next node not marked down; a failed publish is tried again
 * (same sequence number) through the next node. `nodes()` gives the current
 * node list (restarted nodes replace their predecessors).
 */
function startPublisher(nodes, topics, rate) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 32 });
  const seqs = new Array(topics).fill(0);
  const down = new Set();
  const inflight = new Array(NODES).fill(0);
  const unpublished = {};
  const counts = { published: 0, retries: 0, ambiguousRetries: 0, failed: 0 };
  let rr = 0;
  let running = true;
  const pending = new Set();

  async function publishOne(topic, seq) {
    const body = `{"seq":${seq},"t":${now().toFixed(3)}}`;
    for (let attempt = 0; attempt < 3 * NODES; attempt++) {
      if (attempt > 0) {
        counts.retries++;
        await sleep(50);
      }
      let i = rr++ % NODES;
      for (let k = 0; k < NODES && down.has(i); k++) i = rr++ % NODES;
      inflight[i]++;
      const status = await httpStatus(agent, 'POST', `${nodes()[i].api}/v1/publish/deploy/t${topic}`, body, 10_000);
      inflight[i]--;
      if (status === 204) return counts.published++;
      if (status === 0) counts.ambiguousRetries++; // the request may have reached the node: a duplicate would be the publisher's
    }
    counts.failed++;
    (unpublished[topic] = unpublished[topic] || []).push(seq);
  }

  const firstAt = now();
  const loop = (async () => {
    for (let k = 0; running; k++) {
      const wait = firstAt + (k * 1000) / rate - now();
      if (wait > 1) await sleep(wait);
      if (!running) break;
      const topic = k % topics;
      const p = publishOne(topic, ++seqs[topic]).finally(() => pending.delete(p));
      pending.add(p);
    }
  })();

  return {
    /** Publish through node `i` no more; resolves when its publishes in flight have answered. */
    async markDown(i) {
      down.add(i);
      const deadline = Date.now() + 10_000;
      while (inflight[i] > 0 && Date.now() < deadline) await sleep(5);
    },
    markUp: (i) => down.delete(i),
    /** Stop; resolves, once every publish has answered, the last sequence number of every topic and the counts. */
    async stop() {
      running = false;
      await loop;
      await Promise.all([...pending]);
      agent.destroy();
      return { lastSeq: seqs, unpublished, ...counts, seconds: (now() - firstAt) / 1000 };
    },
  };
}

/** Authorization requests the bench upstream has answered so far. */
async function authorizations(stack) {
  return (await stack.upstream.request({ cmd: 'counts' }, 10_000)).authorizations;
}

function deployScenario({ openAll, measured, startStack, latency }) {
  const cost = resumeCost({ openAll, measured, latency });
  const nodeEnv = (stack, n) => ({
    REDIS_URL: stack.redis.url,
    REDIS_PREFIX: stack.prefix,
    NODE_ID: `deploy${n + 1}`,
    // No call is in flight in this scenario, so a drain does not wait; bounded anyway.
    SHUTDOWN_GRACE: '5s',
    // Nobody turns inactive during the run: only `offline` would be a change.
    NEW_CONNECTION_IDLE_TIMEOUT: '10m',
  });
  /** Node 1 alone, with the load workers: where the resume cost is measured (its CPU plus Redis'). */
  const nodeOne = (stack) => ({
    ...stack,
    server: stack.nodes[0],
    nodes: [stack.nodes[0]],
    workers: stack.loadWorkers,
  });

  /** SIGTERM node `n`, wait for its exit, start it again on the same ports and NODE_ID. */
  async function restart(stack, n) {
    const node = stack.nodes[n];
    const at = now();
    const exited = new Promise((resolve) => node.proc.once('exit', (code, signal) => resolve({ code, signal })));
    node.proc.kill('SIGTERM');
    let timer;
    let exit = await Promise.race([exited, new Promise((resolve) => (timer = setTimeout(resolve, 30_000, null)))]);
    clearTimeout(timer);
    if (exit === null) {
      node.proc.kill('SIGKILL');
      exit = { ...(await exited), killed: true };
    }
    const drainMs = now() - at;
    const restarted = await startServer('gateway', stack.upstream.url, nodeEnv(stack, n), {
      port: node.port,
      apiPort: node.apiPort,
    });
    stack.nodes[n] = restarted;
    if (n === 0) stack.server = restarted;
    return { node: n + 1, drainMs, downMs: now() - at, exit };
  }

  /** Wait (bounded) until every deploy client and the watcher is connected and subscribed. */
  async function settled(stack, timeoutMs) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const s = await all(stack.deployWorkers, { cmd: 'status' }, 10_000);
      const notReady = sum(s, (x) => x.total - x.ready);
      if (notReady === 0 || Date.now() > deadline) return notReady;
      await sleep(50);
    }
  }

  /** Publishing from `leadMs` before the first SIGTERM until `tailMs` after every client is back, restart every node in turn. */
  async function rollingRestart(stack, cfg) {
    const publisher = startPublisher(() => stack.nodes, cfg.topics, cfg.rate);
    try {
      await sleep(cfg.leadMs);
      const authBefore = await authorizations(stack);
      const at = now();
      const restarts = [];
      for (let n = 0; n < NODES; n++) {
        await publisher.markDown(n);
        restarts.push(await restart(stack, n));
        publisher.markUp(n);
      }
      const notSettled = await settled(stack, 60_000);
      const deployMs = now() - at;
      await sleep(cfg.tailMs);
      return { authBefore, restarts, notSettled, deployMs, published: await publisher.stop() };
    } catch (err) {
      await publisher.stop(); // no publish outlives a failed run
      throw err;
    }
  }

  async function deploy(stack, cfg, opts) {
    const nodeList = () => stack.nodes.map((n) => ({ url: n.url, api: n.api }));
    const per = Math.ceil(cfg.clients / DEPLOY_WORKERS);
    const started = await Promise.all(
      stack.deployWorkers.map((w, i) =>
        w.request(
          {
            cmd: 'start',
            nodes: nodeList(),
            offset: i * per,
            count: Math.min(per, cfg.clients - i * per),
            topics: cfg.topics,
            concurrency: opts.openConcurrency,
            ipBase: stack.ipBase,
          },
          opts.openTimeoutMs,
        ),
      ),
    );
    const open = {
      opened: sum(started, (s) => s.opened),
      failed: sum(started, (s) => s.failed),
      whys: addCounts(started.map((s) => s.whys)),
    };
    if (open.failed > 0)
      process.stdout.write(
        `\n    ! deploy: ${open.failed} of ${cfg.clients} clients failed to open: ${JSON.stringify(open.whys)}\n`,
      );
    const users = Array.from({ length: cfg.clients }, (_, i) => `d${i}`);
    const { id: _, ...watch } = await stack.deployWorkers[0].request(
      { cmd: 'watch', node: NODES - 1, users, timeoutMs: 30_000 },
      40_000,
    );

    const { authBefore, restarts, notSettled, deployMs, published } = await rollingRestart(stack, cfg);
    const reports = await all(
      stack.deployWorkers,
      {
        cmd: 'report',
        lastSeq: published.lastSeq,
        unpublished: published.unpublished,
        topics: cfg.topics,
        timeoutMs: opts.deliveryTimeoutMs,
      },
      opts.deliveryTimeoutMs + 10_000,
    );
    const authDuring = (await authorizations(stack)) - authBefore;
    const resumeLat = latency(reports.flatMap((r) => r.resumeMs));
    const newLat = latency(reports.flatMap((r) => r.newSessionMs));
    const closeCodes = {};
    for (const r of reports)
      for (const [code, n] of Object.entries(r.closeCodes)) closeCodes[code] = (closeCodes[code] || 0) + n;
    const reconnects = sum(reports, (r) => r.reconnects);
    return {
      open,
      watch,
      published,
      restarts,
      deployMs,
      notSettled,
      authDuring,
      lost: sum(reports, (r) => r.lost),
      clientsWithLoss: sum(reports, (r) => r.clientsWithLoss),
      duplicates: sum(reports, (r) => r.duplicates),
      outOfOrder: sum(reports, (r) => r.outOfOrder),
      delivered: sum(reports, (r) => r.delivered),
      reconnects,
      resumed: sum(reports, (r) => r.resumed),
      newSessions: sum(reports, (r) => r.newSessions),
      resumedPct: reconnects === 0 ? null : (100 * sum(reports, (r) => r.resumed)) / reconnects,
      resumeP50: resumeLat.p50,
      resumeP99: resumeLat.p99,
      newSessionP50: newLat.p50,
      newSessionP99: newLat.p99,
      dialFailures: sum(reports, (r) => r.dialFailures),
      resubscribeFailures: sum(reports, (r) => r.resubscribeFailures),
      lostTopics: sum(reports, (r) => r.lostTopics),
      badHellos: reports.flatMap((r) => r.badHellos).slice(0, 5),
      notReady: sum(reports, (r) => r.notReady),
      closeCodes,
      offline: sum(reports, (r) => r.offline),
      offlineUsers: new Set(reports.flatMap((r) => r.offlineUsers)).size,
    };
  }

  return {
    targets: ['gateway'],

    async startStack(target, opts) {
      const redis = await startRedis();
      let stack;
      try {
        stack = await startStack('gateway', opts);
        // startStack's node runs without REDIS_URL: replace it by the cluster's nodes.
        await stack.server.stop();
        stack = { ...stack, target, redis, prefix: `deploy${Date.now()}:`, loadWorkers: stack.workers, nodes: [] };
        for (let n = 0; n < NODES; n++)
          stack.nodes.push(await startServer('gateway', stack.upstream.url, nodeEnv(stack, n)));
        stack.server = stack.nodes[0];
        stack.deployWorkers = await startWorkers(DEPLOY_WORKERS, 'deploy-worker.js');
        stack.workers = [...stack.loadWorkers, ...stack.deployWorkers];
        return stack;
      } catch (err) {
        await Promise.allSettled([
          redis.stop(),
          ...(stack ? [stack.upstream, ...stack.workers, ...(stack.nodes ?? [])].map((c) => c.stop()) : []),
        ]);
        throw err;
      }
    },

    async setup(stack, cfg, opts) {
      const result = await deploy(stack, cfg, opts);
      // The resume cost, after the deploy (its connections would have been restarted too).
      const one = nodeOne(stack);
      const strip = ({ helloMs: _, ...rest }) => rest;
      return {
        deploy: result,
        resOpen: strip(await cost.open(one, cfg, opts, true)),
        connOpen: strip(await cost.open(one, cfg, opts, false)),
      };
    },

    rounds: (cfg) => cfg.rounds,

    /** Resumes and new connects on node 1, in turn (the order alternates by round). */
    async round(stack, cfg, opts, state, r) {
      const out = { resume: null, connect: null };
      for (const resumable of r % 2 === 0 ? [true, false] : [false, true]) {
        // Without resumable sessions in cluster mode (the hello carries no token), there is nothing to resume.
        if (resumable && state.resOpen.opened === 0) continue;
        out[resumable ? 'resume' : 'connect'] = await cost.round(nodeOne(stack), cfg, opts, r, resumable);
      }
      return out;
    },

    summarize(state, rs) {
      return {
        ...state.deploy,
        resume: { resOpen: state.resOpen, cost: cost.summarize(rs.map((r) => r.resume).filter((x) => x !== null)) },
        connect: { resOpen: state.connOpen, cost: cost.summarize(rs.map((r) => r.connect)) },
      };
    },

    /** Table rows: the deploy's figures in the gateway column; the resume cost as resumes (gateway) vs connects (baseline). */
    rows(label, res, row) {
      const g = res.gateway;
      const out = [];
      const add = (metric, unit, f, target) => out.push(row(label, metric, unit, g && f(g), undefined, target));
      add('clients (resumable) at start', '', (x) => x.open.opened);
      add('failed opens', '', (x) => x.open.failed + (x.watch.hasSnapshot ? 0 : 1), { op: '==0' });
      add('published during the run', 'msgs', (x) => x.published.published);
      add('messages lost', 'msgs', (x) => x.lost, { op: '==0' });
      add('clients that lost any', '', (x) => x.clientsWithLoss);
      add('duplicates', 'msgs', (x) => x.duplicates, { op: '==0' });
      add('out of order', 'msgs', (x) => x.outOfOrder);
      add('authorization requests during the deploy', '', (x) => x.authDuring, { op: '==0' });
      add('reconnects', '', (x) => x.reconnects);
      add('reconnects resumed', '%', (x) => x.resumedPct, { op: 'min', value: 99 });
      add('topics a resumed hello listed as lost', '', (x) => x.lostTopics);
      add('presence flaps (offline seen by the watcher)', '', (x) => x.offline, { op: '==0' });
      add('users seen offline', '', (x) => x.offlineUsers);
      add('resume latency p50 (socket open to resumed hello)', 'ms', (x) => x.resumeP50);
      add('resume latency p99', 'ms', (x) => x.resumeP99);
      add('new-session hello p50 (reconnects not resumed)', 'ms', (x) => x.newSessionP50);
      add('new-session hello p99', 'ms', (x) => x.newSessionP99);
      add('clients not reconnected', '', (x) => x.notSettled + x.resubscribeFailures, { op: '==0' });
      add('rolling restart, first SIGTERM to all reconnected', 's', (x) => x.deployMs / 1000);
      add('publishes retried on another node', '', (x) => x.published.retries);
      const costRow = (metric, unit, f, target) =>
        out.push(row(label, metric, unit, g && f(g.resume), g && f(g.connect), target));
      cost.rows(costRow, ' (node 1 of 3, CPU with Redis)');
      return out;
    },
  };
}

module.exports = { deployScenario };
