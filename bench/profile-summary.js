'use strict';
// Summarise a V8 .cpuprofile: top functions by self time and self time by
// area (our dist/ folders, node_modules packages, Node internals, GC, idle).
// Used by `npm run bench -- --cpu-prof`; also standalone:
//   node bench/profile-summary.js bench/results/prof-<ts>/rpc-x8.cpuprofile [top]

const fs = require('node:fs');
const path = require('node:path');

function areaOf(url, name) {
  if (!url) return name.startsWith('(') ? name : '(native)';
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + 'node_modules/'.length).split('/');
    return 'npm:' + (rest[0].startsWith('@') ? rest[0] + '/' + rest[1] : rest[0]);
  }
  const dist = url.indexOf('/dist/');
  if (dist >= 0) return 'gateway:' + url.slice(dist + 6).split('/')[0];
  if (url.startsWith('node:')) return 'node:' + url.slice(5).split('/')[0];
  if (url.includes('/bench/')) return 'bench:' + path.basename(url);
  return url;
}

function summarize(file, top = 15) {
  const profile = JSON.parse(fs.readFileSync(file, 'utf8'));
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map();
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i];
    self.set(id, (self.get(id) || 0) + (profile.timeDeltas[i] || 0));
  }
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children || []) parent.set(c, n.id);
  const fns = new Map();
  const areas = new Map();
  const inclusive = new Map();
  let total = 0;
  for (const [id, us] of self) {
    const { functionName, url, lineNumber } = byId.get(id).callFrame;
    const name = functionName || '(anonymous)';
    const where = url
      ? `${url.replace(/^.*\/(node_modules|dist)\//, '$1/').replace(/^file:\/\//, '')}:${lineNumber + 1}`
      : '';
    const key = `${name} ${where}`.trim();
    fns.set(key, (fns.get(key) || 0) + us);
    const area = areaOf(url, name);
    areas.set(area, (areas.get(area) || 0) + us);
    total += us;
    // Inclusive time of our own functions (dist/): every distinct one on this sample's stack.
    const seen = new Set();
    for (let at = id; at !== undefined; at = parent.get(at)) {
      const frame = byId.get(at).callFrame;
      if (!frame.url.includes('/dist/') || frame.url.includes('node_modules')) continue;
      const k = `${frame.functionName || '(anonymous)'} ${frame.url.replace(/^.*\/dist\//, 'dist/')}:${frame.lineNumber + 1}`;
      if (seen.has(k)) continue;
      seen.add(k);
      inclusive.set(k, (inclusive.get(k) || 0) + us);
    }
  }
  const busy = total - (areas.get('(idle)') || 0);
  const pct = (us) => ((100 * us) / busy).toFixed(1).padStart(5) + '%';
  const lines = [
    `${path.basename(file)}: ${(total / 1000).toFixed(0)} ms sampled, ${(busy / 1000).toFixed(0)} ms busy (percentages of busy time)`,
  ];
  lines.push('  self time by function:');
  const sortedFns = [...fns]
    .filter(([k]) => !k.startsWith('(idle)'))
    .sort((a, b) => b[1] - a[1])
    .slice(0, top);
  for (const [key, us] of sortedFns) lines.push(`    ${pct(us)}  ${key}`);
  lines.push('  self time by area:');
  const sortedAreas = [...areas]
    .filter(([k]) => k !== '(idle)')
    .sort((a, b) => b[1] - a[1])
    .slice(0, top);
  for (const [key, us] of sortedAreas) lines.push(`    ${pct(us)}  ${key}`);
  const sortedInclusive = [...inclusive].sort((a, b) => b[1] - a[1]).slice(0, top);
  if (sortedInclusive.length > 0) {
    lines.push('  inclusive time of gateway functions (dist/, callees included):');
    for (const [key, us] of sortedInclusive) lines.push(`    ${pct(us)}  ${key}`);
  }
  return {
    text: lines.join('\n'),
    totalMs: total / 1000,
    busyMs: busy / 1000,
    functions: sortedFns,
    areas: sortedAreas,
    inclusive: sortedInclusive,
  };
}

if (require.main === module) {
  const [file, top] = process.argv.slice(2);
  if (!file) {
    process.stderr.write('usage: node bench/profile-summary.js <file.cpuprofile> [top]\n');
    process.exit(2);
  }
  process.stdout.write(summarize(file, Number(top || 15)).text + '\n');
}

module.exports = { summarize };
