'use strict';
/**
 * `npm run demo`: the gateway (dist/main.js, built by the npm script) plus the
 * example chat backend, which also serves the chat page (examples/chat-page),
 * on the default ports unless env says otherwise. Ctrl-C stops both.
 * `npm run demo -- --nodes 2`: two gateway nodes on one Redis (REDIS_URL, or a
 * private redis-server the demo starts), node N on ports 8080+10(N-1) and
 * 8081+10(N-1); the page at `/?node=N` connects to node N.
 * `npm run demo -- --auth-ttl 60`: authorizations last 60 s and are renewed
 * (SPEC §14); the page shows until when, and each renewal.
 * Tests start the same thing on port 0 with startDemo().
 */
const { spawn } = require('node:child_process');
const { randomBytes } = require('node:crypto');
const path = require('node:path');
const readline = require('node:readline');
const { startChatBackend } = require('./chat-backend');
const { startPrivateRedis } = require('./private-redis');
const { buildChatPage } = require('./chat-page/build');

const MAIN_JS = path.join(__dirname, '..', 'dist', 'main.js');
const STARTED = /gateway started.*"public_port":(\d+),"internal_port":(\d+)/;

/**
 * Spawn one gateway process (`node dist/main.js`) that sends every method to
 * `upstreamUrl`. `port` and `apiPort` may be 0. Resolves, once it logs
 * "gateway started", `{ child, publicPort, internalPort, exited, stop() }`;
 * `onLine` gets every line it prints (default: printed as is).
 */
function startGatewayProcess({
  upstreamUrl,
  host = '127.0.0.1',
  port,
  apiPort,
  env = {},
  onLine = (line) => console.log(line),
}) {
  const child = spawn(process.execPath, [MAIN_JS], {
    env: {
      LOG_FORMAT: 'pretty',
      HOST: host,
      ...process.env,
      ...env,
      UPSTREAM_URL: upstreamUrl,
      PORT: String(port),
      BACKEND_API_PORT: String(apiPort),
    },
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
 * ALLOWED_ORIGINS for the demo: the chat page is served by the backend, on
 * another port than the gateway's WebSocket, so the gateway's default (same
 * origin, SPEC §1) would refuse it with 403. The page's origin is listed, under
 * both names of the loopback address; ALLOWED_ORIGINS in the environment wins.
 */
function pageOrigins(backendUrl) {
  if (process.env.ALLOWED_ORIGINS) return process.env.ALLOWED_ORIGINS;
  const { origin, port } = new URL(backendUrl);
  return [origin, `http://localhost:${port}`].join(',');
}

/**
 * The whole demo: the chat page is built, the backend started, then `nodes`
 * gateway processes (more than one: on one Redis, each with its NODE_ID).
 * Ports may be 0; node N listens on `port`/`apiPort` + 10(N-1) when they are
 * not. `gatewayEnv` is added to every gateway's environment; `authTtlSeconds`
 * goes to the backend (authorizations that expire, SPEC §14). Resolves
 * `{ pageUrl, wsUrl, apiUrl, gateway, gateways, backend, stop() }` (the single
 * URLs and `gateway` are node 1's).
 */
async function startDemo({
  host = '127.0.0.1',
  port = 8080,
  apiPort = 8081,
  backendPort = 9000,
  apiToken,
  gatewayEnv = {},
  onLine,
  nodes = 1,
  authTtlSeconds,
} = {}) {
  const page = await buildChatPage();
  const gateways = [];
  // `?node=N` on the page picks the node its WebSocket connects to. Until node N has
  // started it is undefined, and the page is answered 503 with Retry-After (chat-backend.js).
  const nodeOf = (query) => gateways[Math.min(Math.max(Number(query?.get('node')) || 1, 1), nodes) - 1];
  const backend = await startChatBackend({
    port: backendPort,
    host,
    apiUrl: () => {
      if (gateways.length === 0) throw new Error('the gateway has not started yet');
      return `http://${host}:${gateways[0].internalPort}`;
    },
    apiToken,
    page,
    log: onLine ?? ((line) => console.log(line)),
    gatewayPort: (query) => nodeOf(query)?.publicPort,
    authTtlSeconds,
  });
  const backendUrl = `http://${host}:${backend.address().port}`;
  const redis = nodes > 1 && !gatewayEnv.REDIS_URL && !process.env.REDIS_URL ? await startPrivateRedis() : null;
  const clusterEnv =
    nodes > 1
      ? { REDIS_URL: redis?.url ?? process.env.REDIS_URL, REDIS_PREFIX: `demo${randomBytes(4).toString('hex')}:` }
      : {};
  const stop = async () => {
    await Promise.all(gateways.map((gateway) => gateway.stop()));
    await redis?.stop();
    backend.closeAllConnections();
    await new Promise((resolve) => backend.close(resolve));
  };
  try {
    for (let n = 1; n <= nodes; n++) {
      const offset = (n - 1) * 10;
      // A short activity window, so a closed tab shows offline soon (SPEC §8); env may say otherwise.
      const env = {
        NEW_CONNECTION_IDLE_TIMEOUT: '20s',
        ALLOWED_ORIGINS: pageOrigins(backendUrl),
        ...clusterEnv,
        ...(nodes > 1 ? { NODE_ID: `demo${n}` } : {}),
        ...gatewayEnv,
      };
      gateways.push(
        await startGatewayProcess({
          upstreamUrl: backendUrl,
          host,
          port: port && port + offset,
          apiPort: apiPort && apiPort + offset,
          env,
          onLine,
        }),
      );
    }
  } catch (err) {
    await stop();
    throw err;
  }
  const [first] = gateways;
  return {
    pageUrl: `${backendUrl}/`,
    wsUrl: `ws://${host}:${first.publicPort}`,
    apiUrl: `http://${host}:${first.internalPort}`,
    gateway: first,
    gateways,
    backend,
    stop,
  };
}

async function main() {
  const at = process.argv.indexOf('--nodes');
  const nodes = at === -1 ? 1 : Number(process.argv[at + 1]);
  if (!Number.isInteger(nodes) || nodes < 1 || nodes > 9) throw new Error('--nodes takes a number from 1 to 9');
  const ttlAt = process.argv.indexOf('--auth-ttl');
  const authTtlSeconds = ttlAt === -1 ? undefined : Number(process.argv[ttlAt + 1]);
  if (authTtlSeconds !== undefined && !(Number.isInteger(authTtlSeconds) && authTtlSeconds >= 1))
    throw new Error('--auth-ttl takes a whole number of seconds, at least 1');
  const demo = await startDemo({
    port: Number(process.env.PORT || 8080),
    apiPort: Number(process.env.BACKEND_API_PORT || 8081),
    backendPort: Number(process.env.DEMO_BACKEND_PORT || 9000),
    apiToken: process.env.BACKEND_API_TOKEN,
    nodes,
    authTtlSeconds,
  });
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    demo.stop().then(() => process.exit(0));
  };
  for (const gateway of demo.gateways) {
    gateway.exited.then(({ code }) => {
      if (stopping) return;
      console.error(`a gateway exited (${code}): stopping the demo`);
      stop();
      process.exitCode = code || 1;
    });
  }
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  const perNode =
    demo.gateways.length === 1
      ? ''
      : demo.gateways
          .map(
            (g, i) =>
              `  Node ${i + 1}      page ${demo.pageUrl}?node=${i + 1}   WebSocket ws://127.0.0.1:${g.publicPort}   API http://127.0.0.1:${g.internalPort}/v1\n`,
          )
          .join('') + '  (one Redis; a tab on ?node=1 and one on ?node=2 chat across the nodes)\n';
  console.log(`
Gateway demo running${demo.gateways.length === 1 ? '' : ` on ${demo.gateways.length} nodes`}
${perNode}  Chat page   ${demo.pageUrl}     open it in two tabs, join with two names
  WebSocket   ${demo.wsUrl}/?user=<name>     (subprotocol v1.gateway-lattice+json)
  Backend API ${demo.apiUrl}/v1           metrics: ${demo.apiUrl}/metrics
              each connection's id ($CID in the README's /v1 examples) is printed
              below as "connection authorized: user <name>, connection_id <cid>"

Or with a raw WebSocket client (in two terminals, with different users):
  npx wscat -s v1.gateway-lattice+json -c '${demo.wsUrl}/?user=alice'
  > ["echo", {"request_id": 1}, ["hello"], {}]
  > ["chat.join", {"request_id": 2}, ["lobby"], {}]
  > ["chat.send", {"request_id": 3}, ["lobby", "hi all"], {}]

Ctrl-C stops the demo.
`);
}

module.exports = { startDemo, startGatewayProcess, pageOrigins };

if (require.main === module) {
  main().catch((err) => {
    console.error(err.message);
    process.exit(1);
  });
}
