'use strict';
// The processes of a fixed-work comparison (bench/call-cpu.js, fanout-cpu.js,
// resume-cpu.js, refresh-cpu.js): the bench upstream and one gateway build.

const { fork, spawn } = require('node:child_process');
const path = require('node:path');
const { untilReady, processUsage } = require('./fixed-calls');

/**
 * The bench upstream (forked; it names its port) and the gateway `mainJs` on
 * `port` (WebSocket) and `port + 1` (backend API), logging errors only, with
 * `env` added; resolves once the gateway is ready. `stop()` kills both by
 * SIGKILL and waits for the gateway's exit; a failed start stops what it
 * started.
 */
async function startFixedStack(mainJs, port, env = {}) {
  const upstream = fork(path.join(__dirname, '..', 'upstream.js'), [], {
    env: { ...process.env, PORT: '0' },
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  let gateway = null;
  const stop = async () => {
    if (gateway !== null) {
      gateway.kill('SIGKILL');
      if (gateway.exitCode === null) await new Promise((resolve) => gateway.once('exit', resolve));
    }
    upstream.kill('SIGKILL');
  };
  try {
    const upstreamPort = await new Promise((resolve, reject) => {
      upstream.on('message', (m) => m.ready && resolve(m.port));
      upstream.once('exit', (code) => reject(new Error(`upstream exited (${code})`)));
    });
    gateway = spawn(process.execPath, [mainJs], {
      env: {
        ...process.env,
        UPSTREAM_URL: `http://127.0.0.1:${upstreamPort}`,
        HOST: '127.0.0.1',
        PORT: String(port),
        BACKEND_API_HOST: '127.0.0.1',
        BACKEND_API_PORT: String(port + 1),
        LOG_LEVEL: 'error',
        ...env,
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    await untilReady(port + 1, gateway, mainJs, 30_000);
    return { upstream, gateway, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * One measured run of fixed work on the gateway `mainJs` (started on `port`
 * with `env`): `prepare(port)` opens clients and warms up and returns the
 * state `work(state)` and `release(state)` take; over `work` only, the
 * gateway process's user and system µs, read and write syscalls per unit of
 * `units`, and units per second of wall time.
 */
async function measureFixedWork(mainJs, port, units, { prepare, work, release }, env = {}) {
  const { gateway, stop } = await startFixedStack(mainJs, port, env);
  let state = null;
  try {
    state = await prepare(port);
    const before = processUsage(gateway.pid);
    const startedAt = performance.now();
    await work(state);
    const wallMs = performance.now() - startedAt;
    const after = processUsage(gateway.pid);
    return {
      userUs: (after.userUs - before.userUs) / units,
      systemUs: (after.systemUs - before.systemUs) / units,
      reads: (after.reads - before.reads) / units,
      writes: (after.writes - before.writes) / units,
      perSec: (1000 * units) / wallMs,
    };
  } finally {
    if (state !== null) release(state);
    await stop();
  }
}

module.exports = { startFixedStack, measureFixedWork };
