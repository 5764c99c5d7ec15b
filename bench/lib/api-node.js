'use strict';
// A gateway node as a child process for the /v1-only benches (bench/redis-wait.js,
// bench/redis-shards.js): dist/main.js on free loopback ports, no upstream, logs at
// error level; resolves once /health/ready answers.

const { spawn } = require('node:child_process');
const net = require('node:net');
const path = require('node:path');
const { untilReady } = require('./fixed-calls');

const MAIN = path.resolve(__dirname, '..', '..', 'dist', 'main.js');

/** A port the kernel says is free now on 127.0.0.1. */
function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** Start dist/main.js (or the build at `main`) with `env` (REDIS_URL and friends) added; `{ child, apiPort }` once ready. */
async function startApiNode(env, label, main = MAIN) {
  const port = await freePort();
  const apiPort = await freePort();
  const child = spawn(process.execPath, [main], {
    env: {
      ...process.env,
      UPSTREAM_URL: 'http://127.0.0.1:9',
      HOST: '127.0.0.1',
      PORT: String(port),
      BACKEND_API_HOST: '127.0.0.1',
      BACKEND_API_PORT: String(apiPort),
      LOG_LEVEL: 'error',
      ...env,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  await untilReady(apiPort, child, label, 30_000);
  return { child, apiPort };
}

module.exports = { freePort, startApiNode };
