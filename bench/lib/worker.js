'use strict';
// What the client worker processes share (load-worker.js, deploy-worker.js):
// the protocol names, the clock, their /v1 requests and the IPC loop.

const http = require('node:http');
const { performance } = require('node:perf_hooks');

const SUBPROTOCOL = 'v1.gateway-lattice+json';
const RESUME_OPT_IN = 'gateway-resume'; // SPEC §12.1
/** This worker's index among its kind: its share of the 127/8 source addresses. */
const WORKER = Number(process.env.BENCH_WORKER_INDEX || 0);
/** Epoch ms, comparable across the processes of one machine. */
const now = () => performance.timeOrigin + performance.now();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** One HTTP request on `agent`; its status, 0 on a connection error or after `timeoutMs`. */
function httpStatus(agent, method, url, body, timeoutMs = 30_000) {
  return new Promise((resolve) => {
    const headers =
      body === undefined ? {} : { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) };
    const req = http.request(url, { method, agent, headers }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    });
    req.setTimeout(timeoutMs, () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve(0));
    req.end(body);
  });
}

/**
 * `httpCall(method, url, body)` on a keep-alive agent of `maxSockets`: the
 * response's status, 0 on a connection error. A connection error is retried
 * once: a keep-alive socket the server closed for idleness (5 s) can be
 * picked at the moment it closes, and every bench request is idempotent.
 */
function httpCaller(maxSockets) {
  const agent = new http.Agent({ keepAlive: true, maxSockets });
  return async (method, url, body) => {
    const status = await httpStatus(agent, method, url, body);
    return status === 0 ? httpStatus(agent, method, url, body) : status;
  };
}

/** Answer the driver's `{id, cmd, ...}` with `{id, ...result}` (or `{id, error}`); exit when it goes away. */
function serve(commands) {
  process.on('message', (msg) => {
    Promise.resolve()
      .then(() => commands[msg.cmd](msg))
      .then(
        (result) => process.send({ ...result, id: msg.id }),
        (err) => process.send({ id: msg.id, error: String(err && err.stack) }),
      );
  });
  process.on('disconnect', () => process.exit(0));
}

module.exports = { SUBPROTOCOL, RESUME_OPT_IN, WORKER, now, sleep, httpStatus, httpCaller, serve };
