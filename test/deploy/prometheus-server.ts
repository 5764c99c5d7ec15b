import { ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../e2e/harness/ports';

/** One sample of an instant vector from the HTTP API. */
export interface Sample {
  readonly metric: Record<string, string>;
  readonly value: [number, string];
}

/** The answer of GET /api/v1/query: `success` with samples, or `error` with Prometheus's message. */
export type QueryAnswer = { status: 'success'; samples: Sample[] } | { status: 'error'; error: string };

/**
 * A real `prometheus` server (Debian's package) in a child process on a free
 * loopback port, with its own temporary storage, scraping `targets` every
 * second as job `lattice-gateway`. `stop()` kills it by pid and removes its files.
 */
export class PrometheusServer {
  private stderr = '';

  private constructor(
    private readonly child: ChildProcess,
    private readonly dir: string,
    readonly url: string,
  ) {
    child.stderr?.on('data', (chunk: Buffer) => (this.stderr = (this.stderr + chunk.toString()).slice(-4000)));
  }

  static async start(targets: string[]): Promise<PrometheusServer> {
    const dir = mkdtempSync(join(tmpdir(), 'gateway-prometheus-'));
    const config = {
      global: { scrape_interval: '1s', evaluation_interval: '1s' },
      scrape_configs: [{ job_name: 'lattice-gateway', static_configs: [{ targets }] }],
    };
    writeFileSync(join(dir, 'prometheus.yml'), JSON.stringify(config));
    const port = await freePort();
    const child = spawn(
      'prometheus',
      [
        `--config.file=${join(dir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
      ],
      {
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    const server = new PrometheusServer(child, dir, `http://127.0.0.1:${port}`);
    await server.until(
      async () => (await fetch(server.url + '/-/ready')).status === 200,
      'prometheus to be ready',
      30_000,
    );
    return server;
  }

  /** Run an instant query now. */
  async query(expr: string): Promise<QueryAnswer> {
    const response = await fetch(`${this.url}/api/v1/query?query=${encodeURIComponent(expr)}`);
    const body = (await response.json()) as { status: string; data?: { result: Sample[] }; error?: string };
    return body.status === 'success'
      ? { status: 'success', samples: body.data!.result }
      : { status: 'error', error: body.error ?? `HTTP ${response.status}` };
  }

  /** Resolve once Prometheus has scraped every target at least once after now. */
  async nextScrape(ms = 10_000): Promise<void> {
    const after = Date.now() / 1000;
    await this.until(
      async () => {
        const answer = await this.query('min(timestamp(up{job="lattice-gateway"}))');
        return answer.status === 'success' && answer.samples.length === 1 && Number(answer.samples[0].value[1]) > after;
      },
      'a scrape of every target',
      ms,
    );
  }

  /** Poll `check` (every 100 ms) until it holds, within `ms`; the failure names `what` and Prometheus's last log lines. */
  async until(check: () => Promise<boolean>, what: string, ms: number): Promise<void> {
    const deadline = Date.now() + ms;
    for (;;) {
      if (this.child.exitCode !== null)
        throw new Error(`prometheus exited (${this.child.exitCode}) while waiting for ${what}: ${this.stderr}`);
      if (await check().catch(() => false)) return;
      if (Date.now() > deadline)
        throw new Error(`timed out after ${ms} ms waiting for ${what}; prometheus said: ${this.stderr}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null) {
      const exited = new Promise((resolve) => this.child.once('exit', resolve));
      this.child.kill('SIGTERM');
      await exited;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
