'use strict';
/**
 * `npm run demo`: the gateway (dist/main.js, built by the npm script) plus the
 * example chat backend, which also serves the chat page (examples/chat-page),
 * on the default ports unless env says otherwise. Ctrl-C stops both.
 * Tests start the same thing on port 0 with startDemo().
 */
const { spawn } = require('node:child_process');
const path = require('node:path');
const readline = require('node:readline');
const { startChatBackend } = require('./chat-backend');
const { buildChatPage } = require('./chat-page/build');

const MAIN_JS = path.join(__dirname, '..', 'dist', 'main.js');
const STARTED = /gateway started.*"public_port":(\d+),"internal_port":(\d+)/;

/**
 * Spawn one gateway process (`node dist/main.js`) that sends every method to
 * `upstreamUrl`. `port` and `apiPort` may be 0. Resolves, once it logs
 * "gateway started", `{ child, publicPort, internalPort, exited, stop() }`;
 * `onLine` gets every line it prints (default: printed as is).
 */
function startGatewayProcess({ upstreamUrl, host = '127.0.0.1', port, apiPort, env = {}, onLine = (line) => console.log(line) }) {
  const child = spawn(process.execPath, [MAIN_JS], {
    env: { LOG_FORMAT: 'pretty', HOST: host, ...process.env, ...env, UPSTREAM_URL: upstreamUrl, PORT: String(port), BACKEND_API_PORT: String(apiPort) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  readline.createInterface({ input: child.stderr }).on('line', onLine);
  return new Promise((resolve, reject) => {
    readline.createInterface({ input: child.stdout }).on('line', (line) => {
      onLine(line);
      const started = STARTED.exec(line);
      if (started === null) return;
      const stop = () => {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
        return exited;
      };
      resolve({ child, publicPort: Number(started[1]), internalPort: Number(started[2]), exited, stop });
    });
    exited.then(({ code, signal }) => reject(new Error(`the gateway exited (${code ?? signal}) before it started`)));
  });
}

/**
 * The whole demo: the chat page is built, the backend started, then one
 * gateway process. Ports may be 0. `gatewayEnv` is added to the gateway's
 * environment. Resolves `{ pageUrl, wsUrl, apiUrl, gateway, backend, stop() }`.
 */
async function startDemo({ host = '127.0.0.1', port = 8080, apiPort = 8081, backendPort = 9000, apiToken, gatewayEnv = {}, onLine } = {}) {
  const page = await buildChatPage();
  let gateway = null;
  const backend = await startChatBackend({
    port: backendPort,
    host,
    apiUrl: () => `http://${host}:${gateway.internalPort}`,
    apiToken,
    page,
    gatewayPort: () => gateway.publicPort,
  });
  const backendUrl = `http://${host}:${backend.address().port}`;
  try {
    // A short activity window, so a closed tab shows offline soon (SPEC §8); env may say otherwise.
    gateway = await startGatewayProcess({ upstreamUrl: backendUrl, host, port, apiPort, env: { NEW_CONNECTION_IDLE_TIMEOUT: '20s', ...gatewayEnv }, onLine });
  } catch (err) {
    backend.close();
    throw err;
  }
  const stop = async () => {
    await gateway.stop();
    backend.closeAllConnections();
    await new Promise((resolve) => backend.close(resolve));
  };
  return { pageUrl: `${backendUrl}/`, wsUrl: `ws://${host}:${gateway.publicPort}`, apiUrl: `http://${host}:${gateway.internalPort}`, gateway, backend, stop };
}

async function main() {
  const demo = await startDemo({
    port: Number(process.env.PORT || 8080),
    apiPort: Number(process.env.BACKEND_API_PORT || 8081),
    backendPort: Number(process.env.DEMO_BACKEND_PORT || 9000),
    apiToken: process.env.BACKEND_API_TOKEN,
  });
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    demo.stop().then(() => process.exit(0));
  };
  demo.gateway.exited.then(({ code }) => {
    if (stopping) return;
    console.error(`the gateway exited (${code})`);
    demo.backend.close();
    process.exitCode = code || 1;
  });
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  console.log(`
Gateway demo running
  Chat page   ${demo.pageUrl}     open it in two tabs, join with two names
  WebSocket   ${demo.wsUrl}/?user=<name>     (subprotocol v1.gateway-lattice+json)
  Backend API ${demo.apiUrl}/v1           metrics: ${demo.apiUrl}/metrics

Or with a raw WebSocket client (in two terminals, with different users):
  npx wscat -s v1.gateway-lattice+json -c '${demo.wsUrl}/?user=alice'
  > ["echo", {"request_id": 1}, ["hello"], {}]
  > ["chat.join", {"request_id": 2}, ["lobby"], {}]
  > ["chat.send", {"request_id": 3}, ["lobby", "hi all"], {}]

Ctrl-C stops the demo.
`);
}

module.exports = { startDemo, startGatewayProcess };

if (require.main === module) {
  main().catch((err) => {
    console.error(err.message);
    process.exit(1);
  });
}
