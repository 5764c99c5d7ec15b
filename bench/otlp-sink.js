'use strict';
// A minimal OTLP/HTTP collector for `npm run bench -- --tracing`: accepts every
// POST /v1/traces, reads and discards the body, answers 200 {}. It stands in for
// an OpenTelemetry collector so the gateway's exporter does its real work.
//
// Run as a child of bench/lib/stack.js with PORT (0 = any); the bound port is
// sent over IPC ({port}). With BENCH_OTLP_SINK_REPORT=<file>, the number of
// export requests and bytes received is appended to that file on SIGTERM.

const fs = require('node:fs');
const http = require('node:http');

const received = { requests: 0, bytes: 0 };
const server = http.createServer((req, res) => {
  req.on('data', (chunk) => (received.bytes += chunk.length));
  req.on('end', () => {
    received.requests++;
    res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': '2' }).end('{}');
  });
});
server.keepAliveTimeout = 60_000;
server.listen(Number(process.env.PORT || 0), '127.0.0.1', () => {
  const { port } = server.address();
  if (process.send) process.send({ port });
  else process.stdout.write(`otlp sink on http://127.0.0.1:${port}\n`);
});
process.on('SIGTERM', () => {
  if (process.env.BENCH_OTLP_SINK_REPORT)
    fs.appendFileSync(process.env.BENCH_OTLP_SINK_REPORT, JSON.stringify(received) + '\n');
  process.exit(0);
});
