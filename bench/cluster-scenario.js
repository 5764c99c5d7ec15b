'use strict';
// The cluster scenario (issue 10): publish fan-out on one gateway node against
// two nodes on one Redis, in one run. Subscribers are split over the nodes
// (load workers 0-1 connect to node 1, 2-3 to node 2); every publish goes to
// node 1, so half the deliveries cross nodes through Redis. Server CPU adds up
// both nodes and the redis-server. Columns: "baseline" = 1 node, "gateway" =
// 2 nodes + Redis.

const fs = require('node:fs');
const { startServer, sleep } = require('./lib/stack');
const { startPrivateRedis } = require('../examples/private-redis');

const CLOCK_TICKS_PER_SEC = 100; // USER_HZ on Linux

/** The benchmarks' own redis-server (examples/private-redis.js), with its CPU time. */
async function startRedis() {
  const redis = await startPrivateRedis();
  return {
    ...redis,
    /** utime + stime of the process, in ms, from /proc/<pid>/stat. */
    cpuMs() {
      const fields = fs.readFileSync(`/proc/${redis.pid}/stat`, 'utf8').split(') ')[1].split(' ');
      return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_SEC;
    },
  };
}

function clusterScenario({
  openAll,
  postMany,
  deliveryRound,
  measured,
  summarizeDelivery,
  publishBody,
  startStack,
  latency,
}) {
  /** Connections of the stack's first / second half of the workers, through `server`. */
  const half = (stack, server, first) => {
    const mid = Math.ceil(stack.workers.length / 2);
    return { ...stack, server, workers: first ? stack.workers.slice(0, mid) : stack.workers.slice(mid) };
  };

  return {
    async startStack(target, opts) {
      if (target === 'baseline') {
        // One gateway node: the same server as the fanout scenario's gateway, no Redis.
        const stack = await startStack('gateway', opts);
        return { ...stack, target };
      }
      const redis = await startRedis();
      const stack = await startStack('gateway', opts).catch(async (err) => {
        await redis.stop();
        throw err;
      });
      const prefix = `bench${Date.now()}:`;
      try {
        // startStack's node 1 runs without REDIS_URL: replace it by two clustered nodes.
        await stack.server.stop();
        const env = (nodeId) => ({ REDIS_URL: redis.url, REDIS_PREFIX: prefix, NODE_ID: nodeId });
        const nodes = [
          await startServer('gateway', stack.upstream.url, env('bench1')),
          await startServer('gateway', stack.upstream.url, env('bench2')),
        ];
        return { ...stack, target, server: nodes[0], nodes, redis };
      } catch (err) {
        await redis.stop();
        throw err;
      }
    },

    async setup(stack, cfg, opts) {
      const nodes = stack.nodes ?? [stack.server, stack.server];
      const n1 = Math.ceil(cfg.n / 2);
      const opened = [
        await openAll(half(stack, nodes[0], true), n1, { topic: 'bench/fan' }, opts),
        await openAll(half(stack, nodes[1], false), cfg.n - n1, { topic: 'bench/fan', offset: n1 }, opts),
      ];
      const open = { opened: opened[0].opened + opened[1].opened, failed: opened[0].failed + opened[1].failed };
      const url = `${nodes[0].api}/v1/publish/bench/fan`;
      await sleep(300);
      await deliveryRound(stack, opts, cfg.warmup, true, () =>
        postMany(url, cfg.warmup, cfg.inflight, null, publishBody),
      );
      return { open, url };
    },

    rounds: (cfg) => cfg.rounds,

    async round(stack, cfg, opts, state) {
      // Paced (latency under moderate load), then as fast as possible (throughput and CPU).
      const pacedCount = Math.ceil(cfg.paced.count / cfg.rounds);
      const paced = await deliveryRound(stack, opts, pacedCount, true, () =>
        postMany(state.url, pacedCount, 16, cfg.paced.rate, publishBody),
      );
      const count = Math.ceil(cfg.publishes / cfg.rounds);
      const afap = await measured(stack, () =>
        deliveryRound(stack, opts, count, true, () => postMany(state.url, count, cfg.inflight, null, publishBody)),
      );
      return { paced, afap };
    },

    summarize(state, rs) {
      const mid = Math.ceil(rs[0].paced.samplesByWorker.length / 2);
      // Frames received through node 2: in the cluster they crossed nodes through Redis.
      const remote = latency(rs.flatMap((r) => r.paced.samplesByWorker.slice(mid).flat()));
      const local = latency(rs.flatMap((r) => r.paced.samplesByWorker.slice(0, mid).flat()));
      return {
        n: state.open.opened,
        open: state.open,
        paced: summarizeDelivery(rs.map((r) => r.paced)),
        delivery: summarizeDelivery(rs.map((r) => r.afap)),
        remoteP50: remote.p50,
        remoteP99: remote.p99,
        localP50: local.p50,
        localP99: local.p99,
      };
    },

    /** Table rows: "gateway" = 2 nodes + Redis, "baseline" = 1 node. */
    rows(label, res, row) {
      const g = res.gateway;
      const b = res.baseline;
      const out = [];
      const add = (metric, unit, f, target) => out.push(row(label, metric, unit, g && f(g), b && f(b), target));
      add('afap delivered (2 nodes vs 1)', 'msg/s', (r) => r.delivery.deliveredPerSec, { op: '>=', value: 0.7 });
      add('afap publishes', '/s', (r) => r.delivery.sendsPerSec);
      add('afap p50, all', 'ms', (r) => r.delivery.p50);
      add('afap p99, all', 'ms', (r) => r.delivery.p99);
      add('paced p50, node-1 subscribers', 'ms', (r) => r.localP50);
      add('paced p99, node-1 subscribers', 'ms', (r) => r.localP99);
      add('paced p50, node-2 subscribers (cross-node)', 'ms', (r) => r.remoteP50);
      add('paced p99, node-2 subscribers (cross-node)', 'ms', (r) => r.remoteP99);
      add(
        'losses',
        'msgs',
        (r) => r.delivery.losses + r.delivery.duplicates + r.paced.losses + r.paced.duplicates + r.open.failed,
        { op: '==0' },
      );
      add('afap CPU, nodes + Redis', '%', (r) => r.delivery.serverCpuPct);
      add('afap CPU per delivery, nodes + Redis', 'µs', (r) => r.delivery.serverCpuUsPerFrame);
      return out;
    },
  };
}

module.exports = { clusterScenario, startRedis };
