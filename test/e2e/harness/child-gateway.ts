import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import * as path from 'node:path';
import { within } from './wait';

export const PROJECT_ROOT = path.resolve(__dirname, '..', '..', '..');
const MAIN_JS = path.join(PROJECT_ROOT, 'dist', 'main.js');

/** Set by the e2e project's globalSetup once dist/ is built for this run. */
const BUILT_FLAG = 'GATEWAY_E2E_DIST_BUILT';

/**
 * `npm run build` (tsc -p tsconfig.build.json), so a child runs the current
 * code. The e2e project builds once in its globalSetup (jest.config.js), so
 * spec files never rebuild dist/ while another file's children load it; then
 * this is a no-op.
 */
export function buildGateway(timeoutMs = 120_000): void {
  if (process.env[BUILT_FLAG] === '1') return;
  const tsc = require.resolve('typescript/bin/tsc', { paths: [PROJECT_ROOT] });
  try {
    execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], {
      cwd: PROJECT_ROOT,
      timeout: timeoutMs,
      stdio: 'pipe',
    });
  } catch (err) {
    const out = err as { stdout?: Buffer; stderr?: Buffer; message: string };
    throw new Error(`build failed: ${out.message}\n${String(out.stdout ?? '')}${String(out.stderr ?? '')}`);
  }
  process.env[BUILT_FLAG] = '1';
}

/** How a child process ended. */
export interface ChildExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/**
 * `node dist/main.js` as a child process (what production runs), both
 * listeners on port 0; the ports come from its "gateway started" log line.
 */
export class ChildGateway {
  /** Every stdout line, parsed (the gateway logs JSON). */
  readonly logs: Array<Record<string, unknown>> = [];
  stderr = '';
  publicPort = 0;
  internalPort = 0;
  private readonly exited: Promise<ChildExit>;
  private exitInfo: ChildExit | null = null;

  private constructor(readonly child: ChildProcess) {
    this.exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        this.exitInfo = { code, signal };
        resolve(this.exitInfo);
      }),
    );
  }

  get wsUrl(): string {
    return `ws://127.0.0.1:${this.publicPort}`;
  }

  get publicUrl(): string {
    return `http://127.0.0.1:${this.publicPort}`;
  }

  get apiUrl(): string {
    return `http://127.0.0.1:${this.internalPort}`;
  }

  /** Spawn with `env` (PATH only is inherited) and await the "gateway started" line. */
  static async start(env: Record<string, string>, ms = 10_000): Promise<ChildGateway> {
    const child = spawn(process.execPath, [MAIN_JS], {
      cwd: PROJECT_ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        HOST: '127.0.0.1',
        PORT: '0',
        BACKEND_API_HOST: '127.0.0.1',
        BACKEND_API_PORT: '0',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const gateway = new ChildGateway(child);
    const started = new Promise<Record<string, unknown>>((resolve, reject) => {
      let pending = '';
      child.stdout!.on('data', (chunk: Buffer) => {
        pending += chunk.toString('utf8');
        const lines = pending.split('\n');
        pending = lines.pop()!;
        for (const line of lines) {
          if (line.trim() === '') continue;
          let entry: Record<string, unknown>;
          try {
            entry = JSON.parse(line) as Record<string, unknown>;
          } catch {
            entry = { unparsed: line };
          }
          gateway.logs.push(entry);
          if (entry.msg === 'gateway started') resolve(entry);
        }
      });
      child.stderr!.on('data', (chunk: Buffer) => (gateway.stderr += chunk.toString('utf8')));
      child.once('exit', (code, signal) =>
        reject(new Error(`gateway exited (${code ?? signal}) before starting: ${gateway.stderr}`)),
      );
    });
    try {
      const line = await within(started, 'the "gateway started" log line of dist/main.js', ms);
      gateway.publicPort = Number(line.public_port);
      gateway.internalPort = Number(line.internal_port);
    } catch (err) {
      gateway.kill('SIGKILL');
      throw err;
    }
    return gateway;
  }

  kill(signal: NodeJS.Signals): void {
    if (this.exitInfo === null) this.child.kill(signal);
  }

  /** Resolves the exit code and signal, within `ms`. */
  exit(ms = 2000): Promise<ChildExit> {
    return within(this.exited, `dist/main.js to exit (stderr: ${this.stderr.slice(0, 500)})`, ms);
  }

  /** Make sure the process is gone (afterEach). */
  async stop(): Promise<void> {
    if (this.exitInfo !== null) return;
    this.child.kill('SIGKILL');
    await this.exit(5000);
  }
}
