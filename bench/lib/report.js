'use strict';
// Percentiles, the results table (stdout and markdown) and the --check verdicts.

function percentile(sorted, p) {
  if (sorted.length === 0) return null;
  const at = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[at];
}

/** Counts by key ({why: n}) of several workers or rounds, added up. */
function addCounts(list) {
  const out = {};
  for (const counts of list) for (const [key, n] of Object.entries(counts)) out[key] = (out[key] || 0) + n;
  return out;
}

/** {p50, p99, n} in ms of a list of samples. */
function latency(samples) {
  const sorted = Float64Array.from(samples).sort();
  return { p50: percentile(sorted, 50), p99: percentile(sorted, 99), n: sorted.length };
}

/**
 * One table row: a metric measured on both servers.
 * target: {op: '>=' | '<=' | '==0' | 'min', value} — '>='/'<=' on the ratio gateway ÷ baseline,
 * '==0' on both absolute values (losses), 'min' on the gateway's absolute value.
 */
function row(scenario, metric, unit, gateway, baseline, target) {
  const ratio =
    typeof gateway === 'number' && typeof baseline === 'number' && baseline !== 0 ? gateway / baseline : null;
  let pass = null;
  if (target) {
    if (target.op === '==0') pass = gateway === 0 && (baseline === 0 || baseline === undefined);
    else if (target.op === 'min') pass = typeof gateway === 'number' && gateway >= target.value;
    else if (ratio === null) pass = false;
    else pass = target.op === '>=' ? ratio >= target.value : ratio <= target.value;
  }
  return { scenario, metric, unit, gateway, baseline, ratio, target: target ? targetText(target) : '', pass };
}

function targetText(t) {
  if (t.op === 'min') return `≥ ${t.value.toLocaleString('en-US')}`;
  return t.op === '==0' ? '= 0' : `${t.op === '>=' ? '≥' : '≤'} ${t.value}×`;
}

function fmt(v) {
  if (v === null || v === undefined) return '–';
  if (typeof v !== 'number') return String(v);
  if (!Number.isFinite(v)) return String(v);
  if (Number.isInteger(v) && Math.abs(v) < 1e15) return v.toLocaleString('en-US');
  const abs = Math.abs(v);
  const digits = abs >= 1000 ? 0 : abs >= 100 ? 1 : abs >= 10 ? 2 : 3;
  return v.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

const verdict = (r) => (r.pass === null ? '' : r.pass ? 'ok' : 'MISSED');

function cells(r) {
  return [
    r.scenario,
    `${r.metric}${r.unit ? ` (${r.unit})` : ''}`,
    fmt(r.gateway),
    fmt(r.baseline),
    r.ratio === null ? '–' : r.ratio.toFixed(2) + '×',
    r.target,
    verdict(r),
  ];
}

const HEAD = ['scenario', 'metric', 'gateway', 'baseline', 'ratio', 'target', 'check'];
const RIGHT = [false, false, true, true, true, false, false];

function textTable(rows) {
  const lines = [HEAD, ...rows.map(cells)];
  const widths = HEAD.map((_, i) => Math.max(...lines.map((l) => String(l[i]).length)));
  const pad = (l) =>
    l
      .map((c, i) => (RIGHT[i] ? String(c).padStart(widths[i]) : String(c).padEnd(widths[i])))
      .join('  ')
      .trimEnd();
  return [pad(lines[0]), widths.map((w) => '-'.repeat(w)).join('  '), ...lines.slice(1).map(pad)].join('\n');
}

function markdownTable(rows) {
  const out = ['| ' + HEAD.join(' | ') + ' |', '|' + RIGHT.map((r) => (r ? '---:' : '---')).join('|') + '|'];
  for (const r of rows) out.push('| ' + cells(r).join(' | ') + ' |');
  return out.join('\n');
}

module.exports = { latency, percentile, row, textTable, markdownTable, addCounts };
