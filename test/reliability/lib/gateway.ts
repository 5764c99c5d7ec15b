import { ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { PROJECT_ROOT } from '../../e2e/harness/child-gateway';
import { within } from '../../e2e/harness/wait';

const MAIN_JS = path.join(PROJECT_ROOT, 'dist', 'main.js');
const GC_PROBE = path.join(__dirname, 'gc-probe.js');

export type LogEntry = Record<string, unknown>;

export interface StartOptions {
  /** Keep every raw stdout/stderr line (the log scenario); otherwise only warn/error lines are kept. */
  readonly keepAllLines?: boolean;
  /** Extra node flags (measurement settings only, never product behaviour). */
  readonly nodeArgs?: readonly string[];
  /** How long to wait for "gateway started" (default 15 s). */
  readonly startMs?: number;
}

/**
 * `node --expose-gc -r gc-probe.js dist/main.js` in a child process: the built
 * gateway exactly as production runs it, plus a SIGUSR2 probe that prints the
 * heap after a full GC. Counts log lines per level; keeps warn and error lines.
 */
export class GatewayProcess {
  readonly levelCounts = new Map<string, number>();
  /** warn and error entries (all entries with keepAllLines). */
  readonly kept: LogEntry[] = [];
  /** Every raw line, only with keepAllLines. */
  readonly rawLines: string[] = [];
  readonly lineListeners: Array<(entry: LogEntry) => void> = [];
  stderr = '';
  publicPort = 0;
  internalPort = 0;
  private readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private hasExited = false;

  private constructor(
    readonly child: ChildProcess,
    private readonly options: StartOptions,
    /** Where gc-probe.js writes the heap snapshots asked for (removed at stop unless given by the caller). */
    private readonly snapshotDir: { readonly path: string; readonly ours: boolean },
  ) {
    this.exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        this.hasExited = true;
        resolve({ code, signal });
      }),
    );
  }

  get wsUrl(): string {
    return `ws://127.0.0.1:${this.publicPort}`;
  }

  get apiUrl(): string {
    return `http://127.0.0.1:${this.internalPort}`;
  }

  get pid(): number {
    return this.child.pid!;
  }

  /** Error-level entries so far. */
  get errorLines(): LogEntry[] {
    return this.kept.filter((e) => e.level === 'error');
  }

  /** Start with `env`; LOG_LEVEL must stay info or debug: the ports come from the info line "gateway started". */
  static async start(env: Record<string, string>, options: StartOptions = {}): Promise<GatewayProcess> {
    const given = process.env.GC_PROBE_SNAPSHOT_DIR;
    const snapshotDir = { path: given ?? fs.mkdtempSync(path.join(os.tmpdir(), 'gateway-heap-')), ours: !given };
    const child = spawn(process.execPath, ['--expose-gc', ...(options.nodeArgs ?? []), '-r', GC_PROBE, MAIN_JS], {
      cwd: PROJECT_ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        HOST: '127.0.0.1',
        PORT: '0',
        BACKEND_API_HOST: '127.0.0.1',
        BACKEND_API_PORT: '0',
        GC_PROBE_SNAPSHOT_DIR: snapshotDir.path,
        ...(process.env.GC_PROBE_SNAPSHOT_ALL ? { GC_PROBE_SNAPSHOT_ALL: process.env.GC_PROBE_SNAPSHOT_ALL } : {}),
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const gateway = new GatewayProcess(child, options, snapshotDir);
    const started = new Promise<LogEntry>((resolve, reject) => {
      gateway.lineListeners.push((entry) => entry.msg === 'gateway started' && resolve(entry));
      child.once('exit', (code, signal) =>
        reject(new Error(`gateway exited (${code ?? signal}) before starting: ${gateway.stderr}`)),
      );
    });
    gateway.readLines();
    try {
      const line = await within(started, 'the "gateway started" line of dist/main.js', options.startMs ?? 15_000);
      gateway.publicPort = Number(line.public_port);
      gateway.internalPort = Number(line.internal_port);
    } catch (err) {
      child.kill('SIGKILL');
      throw err;
    }
    return gateway;
  }

  /** Resident set size from /proc (no inspector, no hook in the gateway). */
  rssBytes(): number {
    const status = fs.readFileSync(`/proc/${this.pid}/status`, 'utf8');
    const kib = /^VmRSS:\s+(\d+) kB$/m.exec(status);
    if (kib === null) throw new Error('VmRSS missing from /proc status');
    return Number(kib[1]) * 1024;
  }

  /**
   * Used heap right after two full GCs in the gateway (SIGUSR2 → gc-probe.js), less V8's
   * code spaces: JIT-compiled code grows with how much V8 has optimized, not with state kept.
   */
  async heapAfterGc(): Promise<number> {
    const entry = await this.gcProbe();
    return Number(entry.heap_used) - Number(entry.code_used);
  }

  /** A heap snapshot taken right after two full GCs; its path (removed when the gateway stops). */
  async heapSnapshot(): Promise<string> {
    fs.writeFileSync(path.join(this.snapshotDir.path, 'wanted'), '');
    const entry = await this.gcProbe();
    if (typeof entry.snapshot !== 'string') throw new Error('the gc probe wrote no heap snapshot');
    return entry.snapshot;
  }

  private async gcProbe(): Promise<LogEntry> {
    const line = new Promise<LogEntry>((resolve) => {
      const listener = (entry: LogEntry): void => {
        if (entry.msg !== 'gc probe') return;
        this.lineListeners.splice(this.lineListeners.indexOf(listener), 1);
        resolve(entry);
      };
      this.lineListeners.push(listener);
    });
    this.child.kill('SIGUSR2');
    return within(line, 'the gc probe line', 60_000);
  }

  /** GET /metrics as name{labels} → value. */
  async metrics(): Promise<Map<string, number>> {
    const text = await (await fetch(this.apiUrl + '/metrics')).text();
    const values = new Map<string, number>();
    for (const line of text.split('\n')) {
      if (line === '' || line.startsWith('#')) continue;
      const at = line.lastIndexOf(' ');
      values.set(line.slice(0, at), Number(line.slice(at + 1)));
    }
    return values;
  }

  /** The gauges of SPEC §10 that must come back to their start after load. */
  async gauges(): Promise<Record<string, number>> {
    const m = await this.metrics();
    const names = ['gateway_connections', 'gateway_topics', 'gateway_lattice_namespaces'];
    return Object.fromEntries(names.map((n) => [n, m.get(n) ?? NaN]));
  }

  kill(signal: NodeJS.Signals): void {
    if (!this.hasExited) this.child.kill(signal);
  }

  exit(ms: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    return within(this.exited, `the gateway to exit (stderr: ${this.stderr.slice(0, 300)})`, ms);
  }

  get alive(): boolean {
    return !this.hasExited;
  }

  async stop(): Promise<void> {
    if (!this.hasExited) {
      this.child.kill('SIGKILL');
      await this.exit(10_000);
    }
    if (this.snapshotDir.ours) fs.rmSync(this.snapshotDir.path, { recursive: true, force: true });
  }

  private readLines(): void {
    let pending = '';
    this.child.stdout!.on('data', (chunk: Buffer) => {
      pending += chunk.toString('utf8');
      const lines = pending.split('\n');
      pending = lines.pop()!;
      for (const line of lines) if (line.trim() !== '') this.onLine(line);
    });
    this.child.stderr!.on('data', (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      this.stderr += text;
      if (this.options.keepAllLines) this.rawLines.push(text);
    });
  }

  private onLine(line: string): void {
    if (this.options.keepAllLines) this.rawLines.push(line);
    let entry: LogEntry;
    try {
      entry = JSON.parse(line) as LogEntry;
    } catch {
      entry = { level: 'unparsed', line };
    }
    const level = String(entry.level ?? 'none');
    this.levelCounts.set(level, (this.levelCounts.get(level) ?? 0) + 1);
    if (this.options.keepAllLines || level === 'error' || level === 'warn' || level === 'unparsed')
      this.kept.push(entry);
    for (const listener of [...this.lineListeners]) listener(entry);
  }
}

/** Sample the gateway's RSS every `everyMs` until stopped; returns start, peak and last. */
export function sampleRss(
  gateway: GatewayProcess,
  everyMs = 500,
): { stop(): { startBytes: number; peakBytes: number; lastBytes: number; samples: number[] } } {
  const samples = [gateway.rssBytes()];
  const timer = setInterval(() => {
    if (gateway.alive) samples.push(gateway.rssBytes());
  }, everyMs);
  return {
    stop: () => {
      clearInterval(timer);
      if (gateway.alive) samples.push(gateway.rssBytes());
      return {
        startBytes: samples[0],
        peakBytes: Math.max(...samples),
        lastBytes: samples[samples.length - 1],
        samples,
      };
    },
  };
}
