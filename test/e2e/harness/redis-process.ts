import { ChildProcess, spawn } from 'node:child_process';
import Redis from 'ioredis';
import { within } from './wait';

/** `redis-server` processes on loopback stopped by PID, and one-shot commands to them (see redis-sentinel.ts). */

const HOST = '127.0.0.1';

/** One `redis-server` process on a fixed port, started (again) with the same arguments and killed by PID. */
export class RedisProcess {
  private child: ChildProcess | null = null;

  constructor(
    readonly port: number,
    private readonly args: readonly string[],
  ) {}

  async start(ms = 5000): Promise<void> {
    const child = spawn('redis-server', [...this.args, '--port', String(this.port)], { stdio: 'ignore' });
    this.child = child;
    const failed = new Promise<never>((_, reject) =>
      child.once('error', (err) => reject(new Error(`redis-server could not start: ${err.message}`))),
    );
    await within(
      Promise.race([untilTrue(async () => (await redisCommand(this.port, ['PING'])) === 'PONG', 'PING', ms), failed]),
      `redis-server on port ${this.port} to answer PING`,
      ms,
    );
  }

  pause(): void {
    this.child?.kill('SIGSTOP');
  }

  resume(): void {
    this.child?.kill('SIGCONT');
  }

  /** SIGKILL (also ends a paused process) and wait for the exit. */
  async kill(): Promise<void> {
    const child = this.child;
    this.child = null;
    if (child === null || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await within(exited, `redis-server on port ${this.port} to exit`, 5000);
  }
}

/** One command on a short-lived connection; null when the node does not answer. */
export async function redisCommand(port: number, args: readonly string[]): Promise<unknown> {
  const client = new Redis({
    host: HOST,
    port,
    lazyConnect: true,
    retryStrategy: () => null,
    maxRetriesPerRequest: 0,
    connectTimeout: 1000,
    enableReadyCheck: false,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return await client.call(args[0], ...args.slice(1));
  } catch {
    return null;
  } finally {
    client.disconnect();
  }
}

/** `INFO <section>` of the node on `port`; empty when it does not answer. */
export async function redisInfo(port: number, section: string): Promise<string> {
  const reply = await redisCommand(port, ['INFO', section]);
  return typeof reply === 'string' ? reply : '';
}

/** The first word of ROLE (`master`, `slave`, `sentinel`), or null when the node does not answer. */
export async function redisRole(port: number): Promise<string | null> {
  const reply = await redisCommand(port, ['ROLE']);
  return Array.isArray(reply) ? String(reply[0]) : null;
}

/** Poll `check` until it resolves true; reject after `ms` naming `what`. */
export async function untilTrue(check: () => Promise<boolean>, what: string, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await pollPause(20);
  }
}

/** The poll interval of a bounded wait (not a synchronisation: every caller re-checks a condition). */
export function pollPause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
