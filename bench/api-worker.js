'use strict';
// A load generator for the `api` scenario, forked by bench/run.js: keep-alive
// TCP connections to a /v1 listener, one request in flight on each (closed
// loop, like `wrk -c`), requests written as prebuilt bytes and responses read
// with a minimal parser (status line, Content-Length), so the client costs
// little next to the server. IPC: {id, cmd: 'load', port, connections,
// durationMs, requests: [string], expect: status} → {id, requests, errors,
// elapsedMs, statuses}; {cmd: 'close'} → {}.

const net = require('node:net');

const HEAD_END = Buffer.from('\r\n\r\n');
const CONTENT_LENGTH = /\r\ncontent-length:\s*(\d+)/i;

/** Drive one connection until `deadline`; resolves its counts. */
function drive(port, requests, expect, deadline, counts) {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.setNoDelay(true);
    let buffered = Buffer.alloc(0);
    let next = 0;
    const send = () => {
      if (performance.now() >= deadline) return socket.end();
      socket.write(requests[next]);
      next = (next + 1) % requests.length;
    };
    socket.on('connect', send);
    socket.on('data', (chunk) => {
      buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
      for (;;) {
        const headEnd = buffered.indexOf(HEAD_END);
        if (headEnd < 0) return;
        const head = buffered.toString('latin1', 0, headEnd);
        const length = CONTENT_LENGTH.exec(head);
        const total = headEnd + 4 + (length === null ? 0 : Number(length[1]));
        if (buffered.length < total) return;
        const status = Number(head.slice(9, 12));
        counts.statuses[status] = (counts.statuses[status] || 0) + 1;
        if (status === expect) counts.requests++;
        else counts.errors++;
        buffered = buffered.subarray(total);
        send();
      }
    });
    socket.on('error', () => counts.errors++);
    socket.on('close', resolve);
  });
}

async function load(msg) {
  const requests = msg.requests.map((r) => Buffer.from(r, 'latin1'));
  const counts = { requests: 0, errors: 0, statuses: {} };
  const started = performance.now();
  const deadline = started + msg.durationMs;
  await Promise.all(
    Array.from({ length: msg.connections }, () => drive(msg.port, requests, msg.expect, deadline, counts)),
  );
  return { ...counts, elapsedMs: performance.now() - started };
}

process.on('message', (msg) => {
  if (msg.cmd === 'close') return process.send({ id: msg.id });
  if (msg.cmd !== 'load') return process.send({ id: msg.id, error: `unknown command ${msg.cmd}` });
  load(msg).then(
    (result) => process.send({ id: msg.id, ...result }),
    (err) => process.send({ id: msg.id, error: String(err && err.message) }),
  );
});
process.on('disconnect', () => process.exit(0));
