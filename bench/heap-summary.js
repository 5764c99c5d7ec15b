'use strict';
// Summarise a V8 .heapsnapshot: self size by constructor (objects), by
// function (closures) or by node type, divided by a connection count to read
// "bytes per connection" per kind. Used by `npm run bench -- --cpu-prof` on the
// idle scenario; also standalone:
//   node bench/heap-summary.js <after.heapsnapshot> <connections> [top] [before.heapsnapshot]

const fs = require('node:fs');
const path = require('node:path');

/** Self size by kind: constructor (objects), function (closures) or node type. */
function sizesByKind(file) {
  const snap = JSON.parse(fs.readFileSync(file, 'utf8'));
  const fields = snap.snapshot.meta.node_fields;
  const types = snap.snapshot.meta.node_types[0];
  const width = fields.length;
  const [TYPE, NAME, SELF] = ['type', 'name', 'self_size'].map((f) => fields.indexOf(f));
  const { nodes, strings } = snap;
  const bySize = new Map();
  for (let i = 0; i < nodes.length; i += width) {
    const type = types[nodes[i + TYPE]];
    const name = strings[nodes[i + NAME]];
    const key =
      type === 'object' || type === 'native'
        ? name
        : type === 'closure'
          ? `closure ${name || '(anonymous)'}`
          : `(${type})`;
    bySize.set(key, (bySize.get(key) || 0) + nodes[i + SELF]);
  }
  return bySize;
}

/** (after − before) ÷ connections, by kind; `before` may be null (then absolute sizes). */
function summarizeHeap(file, connections, top = 15, before = null) {
  const after = sizesByKind(file);
  const base = before ? sizesByKind(before) : new Map();
  const n = Math.max(1, connections);
  const delta = new Map();
  for (const key of new Set([...after.keys(), ...base.keys()]))
    delta.set(key, (after.get(key) || 0) - (base.get(key) || 0));
  const total = [...delta.values()].reduce((a, b) => a + b, 0);
  const sorted = [...delta].sort((a, b) => b[1] - a[1]).slice(0, top);
  const what = before ? 'growth of live objects' : 'live objects';
  const lines = [
    `${path.basename(file)}: ${what} ${(total / 2 ** 20).toFixed(1)} MiB = ${(total / n).toFixed(0)} B per connection (${connections} connections)`,
  ];
  lines.push('  self size by kind, bytes per connection:');
  for (const [key, size] of sorted) lines.push(`    ${(size / n).toFixed(0).padStart(7)} B  ${key}`);
  return {
    text: lines.join('\n'),
    totalBytes: total,
    perConnection: total / n,
    kinds: sorted.map(([k, s]) => [k, s / n]),
  };
}

if (require.main === module) {
  const [file, connections, top, before] = process.argv.slice(2);
  if (!file || !connections) {
    process.stderr.write(
      'usage: node bench/heap-summary.js <after.heapsnapshot> <connections> [top] [before.heapsnapshot]\n',
    );
    process.exit(2);
  }
  process.stdout.write(summarizeHeap(file, Number(connections), Number(top || 15), before || null).text + '\n');
}

module.exports = { summarizeHeap };
