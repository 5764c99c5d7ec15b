import { waitFor } from './wait';

/** A tiny Prometheus text-format reader for e2e specs: value by `name{labels}`. */

/** One sample line of the exposition text. */
export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

const SAMPLE_LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const LABEL_PAIR = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?\s*/gy;
const HISTOGRAM_SUFFIX = /_(?:bucket|count|sum)$/;

/** A parsed scrape. */
export class MetricsText {
  private readonly byKey = new Map<string, number>();

  constructor(
    readonly samples: readonly Sample[],
    /** Metric families declared by `# TYPE` lines. */
    readonly families: ReadonlySet<string>,
  ) {
    for (const sample of samples) this.byKey.set(keyOf(sample.name, sample.labels), sample.value);
  }

  /** The value of `name` or `name{a="x",b="y"}` (label order does not matter); undefined when absent. */
  get(key: string): number | undefined {
    const { name, labels } = parseKey(key);
    return this.byKey.get(keyOf(name, labels));
  }

  /**
   * The value of `key`, 0 when its family is declared but this label set has
   * not been recorded yet (prom-client omits untouched label sets). Throws when
   * the family itself is unknown, so a misspelt name cannot pass as 0.
   */
  value(key: string): number {
    const found = this.get(key);
    if (found !== undefined) return found;
    const { name } = parseKey(key);
    if (!this.families.has(name) && !this.families.has(name.replace(HISTOGRAM_SUFFIX, ''))) {
      throw new Error(`metric ${name} is not declared in /metrics`);
    }
    return 0;
  }

  /** Every label value of every sample. */
  labelValues(): string[] {
    return this.samples.flatMap((s) => Object.values(s.labels));
  }
}

/** Parse Prometheus text exposition format (0.0.4). */
export function parseMetrics(text: string): MetricsText {
  const samples: Sample[] = [];
  const families = new Set<string>();
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '') continue;
    if (line.startsWith('#')) {
      const type = /^# TYPE (\S+) /.exec(line);
      if (type) families.add(type[1]);
      continue;
    }
    const match = SAMPLE_LINE.exec(line);
    if (match === null) throw new Error(`unparsable metrics line: ${line}`);
    samples.push({ name: match[1], labels: parseLabels(match[2] ?? '', line), value: parseValue(match[3]) });
  }
  return new MetricsText(samples, families);
}

/** GET `<apiUrl>/metrics` and parse it. */
export async function scrapeMetrics(apiUrl: string): Promise<MetricsText> {
  const res = await fetch(apiUrl + '/metrics');
  const text = await res.text();
  if (res.status !== 200) throw new Error(`GET /metrics answered ${res.status}: ${text.slice(0, 200)}`);
  return parseMetrics(text);
}

/** Re-scrape until `key`'s value satisfies `accept`, within `ms`; resolves that value. */
export async function untilMetric(
  apiUrl: string,
  key: string,
  accept: (value: number) => boolean,
  ms = 2000,
): Promise<number> {
  let last = NaN;
  await waitFor(
    async () => accept((last = (await scrapeMetrics(apiUrl)).value(key))),
    () => `${key} to satisfy ${accept.toString()} (last ${last})`,
    ms,
    10,
  );
  return last;
}

function parseLabels(text: string, line: string): Record<string, string> {
  const labels: Record<string, string> = {};
  LABEL_PAIR.lastIndex = 0;
  let at = 0;
  for (let m = LABEL_PAIR.exec(text); m !== null; m = LABEL_PAIR.exec(text)) {
    labels[m[1]] = m[2].replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    at = LABEL_PAIR.lastIndex;
  }
  if (at !== text.length) throw new Error(`unparsable labels in metrics line: ${line}`);
  return labels;
}

function parseValue(text: string): number {
  // Special values are case-insensitive (prom-client writes `Nan`).
  if (/^nan$/i.test(text)) return NaN;
  if (/^\+?inf$/i.test(text)) return Infinity;
  if (/^-inf$/i.test(text)) return -Infinity;
  const value = Number(text);
  if (Number.isNaN(value)) throw new Error(`bad metric value ${text}`);
  return value;
}

function parseKey(key: string): { name: string; labels: Record<string, string> } {
  const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?$/.exec(key.trim());
  if (match === null) throw new Error(`bad metric key ${key}`);
  return { name: match[1], labels: parseLabels(match[2] ?? '', key) };
}

function keyOf(name: string, labels: Readonly<Record<string, string>>): string {
  const pairs = Object.keys(labels)
    .sort()
    .map((k) => `${k}=${JSON.stringify(labels[k])}`);
  return `${name}{${pairs.join(',')}}`;
}
