'use strict';
// The `api` scenario (issue 12): /v1 throughput of the gateway beside a bare
// Express 5 route and a bare node:http handler doing the same read +
// JSON.parse + 204 (bench/baseline/api-bare.js), and a minimal Nest app whose
// controller routes do just that (baseline/api-nest.js: the framework's floor),
// all four up at once and measured in interleaved rounds. Workloads, each a closed loop of keep-alive
// connections with one request in flight (like `wrk -c32`):
//   publish    POST /v1/publish/bench/api, a 64-byte JSON body, no subscribers
//   subscribe  PUT /v1/connection/<well-formed, unknown cid>/subscriptions/bench/api
//   lattice    POST /v1/lattice/bench/api, a counter update, no subscribers
//   batch100   POST /v1/batch with 100 publishes of the same body
// Figures: requests/s (median round) and server CPU per request (µs, median).

const { cpuOf } = require('./lib/stack');
const { row } = require('./lib/report');

const TARGETS = ['node', 'express', 'nest', 'gateway'];
const BODY = '{"text":"hello, this is a 64-byte JSON message body!!","seq":1234}';
const UNKNOWN_CID = 'Zz_bench-unknown-connection';

function request(method, path, body) {
  const head = `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n`;
  if (body === undefined) return head + '\r\n';
  return head + `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n` + body;
}

const batchBody = JSON.stringify({
  commands: Array.from({ length: 100 }, () => ({
    method: 'POST',
    path: '/v1/publish/bench/api',
    body: JSON.parse(BODY),
  })),
});

const WORKLOADS = [
  { key: 'publish', expect: 204, perRequest: 1, requests: [request('POST', '/v1/publish/bench/api', BODY)] },
  {
    key: 'subscribe',
    expect: 204,
    perRequest: 1,
    requests: [request('PUT', `/v1/connection/${UNKNOWN_CID}/subscriptions/bench/api`)],
  },
  {
    key: 'lattice',
    expect: 204,
    perRequest: 1,
    requests: [request('POST', '/v1/lattice/bench/api', '{"shared":{"room":{"msg_counter":7}}}')],
  },
  { key: 'batch100', expect: 200, perRequest: 100, requests: [request('POST', '/v1/batch', batchBody)] },
];

const median = (xs) => {
  const s = xs.filter((x) => typeof x === 'number').sort((a, b) => a - b);
  return s.length === 0 ? null : s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/** One workload on one server for `durationMs`: requests/s, errors and server CPU per request. */
async function measure(stack, cfg, workload) {
  const port = Number(new URL(stack.server.api).port);
  const connections = Math.ceil(cfg.connections / stack.workers.length);
  const cpu = await cpuOf(stack.server);
  const parts = await Promise.all(
    stack.workers.map((w) =>
      w.request(
        {
          cmd: 'load',
          port,
          connections,
          durationMs: cfg.durationMs,
          requests: workload.requests,
          expect: workload.expect,
        },
        cfg.durationMs + 30_000,
      ),
    ),
  );
  const used = await cpu.since();
  const requests = parts.reduce((s, p) => s + p.requests, 0);
  const elapsedMs = Math.max(...parts.map((p) => p.elapsedMs));
  return {
    requests,
    errors: parts.reduce((s, p) => s + p.errors, 0),
    reqPerSec: (1000 * requests) / elapsedMs,
    cpuUsPerReq: (1000 * used.cpuMs) / Math.max(1, requests),
    cpuPct: (100 * used.cpuMs) / used.wallMs,
  };
}

const api = {
  workers: 2,
  workerFile: 'api-worker.js',
  targets: TARGETS,
  async setup(stack, cfg) {
    // Warm-up: JIT, sockets, the router's caches.
    for (const workload of WORKLOADS) await measure(stack, { ...cfg, durationMs: cfg.warmupMs }, workload);
    return {};
  },
  rounds: (cfg) => cfg.rounds,
  async round(stack, cfg) {
    const out = {};
    for (const workload of WORKLOADS)
      out[workload.key] = await measure(stack, { ...cfg, durationMs: cfg.durationMs / cfg.rounds }, workload);
    return out;
  },
  summarize(state, rs) {
    const out = {};
    for (const { key, perRequest } of WORKLOADS) {
      const parts = rs.map((r) => r[key]);
      out[key] = {
        reqPerSec: median(parts.map((p) => p.reqPerSec)),
        reqPerSecRounds: parts.map((p) => Math.round(p.reqPerSec)),
        perRequest,
        cpuUsPerReq: median(parts.map((p) => p.cpuUsPerReq)),
        cpuPct: median(parts.map((p) => p.cpuPct)),
        errors: parts.reduce((s, p) => s + p.errors, 0),
      };
    }
    return out;
  },
};

const NAMES = { express: 'Express', node: 'node:http', nest: 'minimal Nest' };

/**
 * Table rows: each figure as gateway ÷ bare Express (the target), ÷ bare
 * node:http, and ÷ a minimal Nest app (the framework's own floor).
 */
function apiRows(label, res) {
  const g = res.gateway;
  const out = [];
  const add = (metric, unit, f, against, target) =>
    out.push(row(label, `${metric} ÷ ${NAMES[against]}`, unit, g && f(g), res[against] && f(res[against]), target));
  for (const { key } of WORKLOADS) {
    const target = key === 'publish' || key === 'subscribe' ? { op: '>=', value: 0.9 } : undefined;
    add(`${key} requests`, '/s', (r) => r[key].reqPerSec, 'express', target);
    add(`${key} requests`, '/s', (r) => r[key].reqPerSec, 'node');
    add(`${key} requests`, '/s', (r) => r[key].reqPerSec, 'nest');
    add(`${key} server CPU per request`, 'µs', (r) => r[key].cpuUsPerReq, 'express');
    add(`${key} server CPU per request`, 'µs', (r) => r[key].cpuUsPerReq, 'node');
    add(`${key} server CPU per request`, 'µs', (r) => r[key].cpuUsPerReq, 'nest');
  }
  out.push({
    ...row(
      label,
      'batch100 publishes (gateway ÷ Express)',
      '/s',
      g && g.batch100.reqPerSec * 100,
      res.express && res.express.batch100.reqPerSec * 100,
      { op: 'min', value: 100_000 },
    ),
  });
  out.push(
    row(
      label,
      'errors (gateway ÷ Express)',
      'requests',
      g && WORKLOADS.reduce((s, w) => s + g[w.key].errors, 0),
      res.express && WORKLOADS.reduce((s, w) => s + res.express[w.key].errors, 0),
      { op: '==0' },
    ),
  );
  return out;
}

module.exports = { api, apiRows };
