'use strict';
/**
 * A private `redis-server` on a free loopback port, nothing on disk, stopped
 * by its PID: the cluster demo's Redis when REDIS_URL is not set, and the
 * benchmarks' (bench/cluster-scenario.js). Needs `redis-server` (Redis 7) on
 * the PATH.
 */
const { spawn } = require('node:child_process');
const net = require('node:net');

/** A free TCP port on 127.0.0.1. */
function freePort() {
  return new Promise((resolve, reject) => {
    const probe = net.createServer().once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

function answers(port) {
  return new Promise((resolve) => {
    const socket = net
      .connect(port, '127.0.0.1', () => socket.end(() => resolve(true)))
      .once('error', () => resolve(false));
  });
}

/**
 * Start one; resolves `{ url, port, pid, stop() }` once it listens (within
 * `timeoutMs`), rejects when it cannot start. `stop()` resolves once it exited.
 */
async function startPrivateRedis({ timeoutMs = 10_000 } = {}) {
  const port = await freePort();
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'];
  const child = spawn('redis-server', [...args, '--maxmemory-policy', 'noeviction'], { stdio: 'ignore' });
  const failed = new Promise((_, reject) =>
    child.once('error', (err) =>
      reject(new Error(`redis-server could not start (${err.message}): set REDIS_URL to a Redis 7`)),
    ),
  );
  const deadline = Date.now() + timeoutMs;
  while (!(await Promise.race([answers(port), failed]))) {
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`redis-server did not listen within ${timeoutMs} ms`);
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    pid: child.pid,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 3000))]);
    },
  };
}

module.exports = { startPrivateRedis };
