'use strict';
/**
 * `npm run demo`: the gateway (dist/main.js, built by the npm script) plus the
 * example chat backend, on the default ports unless env says otherwise.
 * Ctrl-C stops both.
 */
const { spawn } = require('node:child_process');
const path = require('node:path');
const { startChatBackend } = require('./chat-backend');

const HOST = '127.0.0.1';
const PORT = process.env.PORT || '8080';
const API_PORT = process.env.BACKEND_API_PORT || '8081';
const BACKEND_PORT = Number(process.env.DEMO_BACKEND_PORT || 9000);

async function main() {
  const backend = await startChatBackend({ port: BACKEND_PORT, host: HOST, apiUrl: `http://${HOST}:${API_PORT}`, apiToken: process.env.BACKEND_API_TOKEN });
  const gateway = spawn(process.execPath, [path.join(__dirname, '..', 'dist', 'main.js')], {
    env: { LOG_FORMAT: 'pretty', ...process.env, UPSTREAM_URL: `http://${HOST}:${BACKEND_PORT}`, PORT, BACKEND_API_PORT: API_PORT },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    gateway.kill('SIGTERM');
  };
  gateway.on('exit', (code) => {
    backend.close();
    process.exitCode = stopping ? 0 : code || 1;
  });
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  await waitForReady(`http://${HOST}:${PORT}/health/ready`, gateway);
  console.log(`
Gateway demo running
  WebSocket   ws://${HOST}:${PORT}/?user=<name>     (subprotocol v1.gateway-lattice+json)
  Backend API http://${HOST}:${API_PORT}/v1           metrics: http://${HOST}:${API_PORT}/metrics
  Example backend http://${HOST}:${BACKEND_PORT}

Try it (in two terminals, with different users):
  npx wscat -s v1.gateway-lattice+json -c 'ws://${HOST}:${PORT}/?user=alice'
  > ["echo", {"request_id": 1}, ["hello"], {}]
  > ["chat.join", {"request_id": 2}, ["lobby"], {}]
  > ["chat.send", {"request_id": 3}, ["lobby", "hi all"], {}]

Ctrl-C stops the demo.
`);
}

async function waitForReady(url, child) {
  for (let i = 0; i < 100 && child.exitCode === null; i++) {
    try {
      if ((await fetch(url)).status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('the gateway did not become ready');
}

main().catch((err) => {
  console.error(err.message);
  process.exit(1);
});
