import * as fs from 'node:fs';
import * as path from 'node:path';
import { PROFILE } from './profile';

const RESULTS_DIR = path.join(__dirname, '..', 'results');

/** Figures of one scenario, printed and appended to test/reliability/results/<profile>.jsonl. */
export function record(scenario: string, figures: Record<string, unknown>): void {
  const entry = { scenario, profile: PROFILE, node: process.version, at: new Date().toISOString(), ...figures };
  fs.mkdirSync(RESULTS_DIR, { recursive: true });
  fs.appendFileSync(path.join(RESULTS_DIR, `${PROFILE}.jsonl`), JSON.stringify(entry) + '\n');
  process.stdout.write(`\n[reliability] ${scenario} (${PROFILE}): ${JSON.stringify(figures, null, 1)}\n`);
}

/**
 * Named checks of one scenario: every check is evaluated, then the scenario
 * fails listing each failed check by name (not only the first).
 */
export class Checks {
  private readonly failed: string[] = [];
  private readonly passed: string[] = [];

  check(name: string, ok: boolean, detail: unknown = ''): void {
    if (ok) this.passed.push(name);
    else this.failed.push(`${name}: ${typeof detail === 'string' ? detail : JSON.stringify(detail)}`.slice(0, 2000));
  }

  get summary(): { passed: string[]; failed: string[] } {
    return { passed: [...this.passed], failed: [...this.failed] };
  }

  assertAll(): void {
    if (this.failed.length > 0)
      throw new Error(`${this.failed.length} check(s) failed:\n- ${this.failed.join('\n- ')}`);
  }
}

/** p-th percentile (0–100) of `values`. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

export const MiB = 1024 * 1024;
export const mib = (bytes: number): number => Math.round((bytes / MiB) * 10) / 10;
