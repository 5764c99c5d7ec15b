import * as fs from 'node:fs';

interface Bucket {
  count: number;
  bytes: number;
}

/** Objects of a V8 heap snapshot grouped by kind and constructor name (strings by kind). */
function buckets(file: string): Map<string, Bucket> {
  const snapshot = JSON.parse(fs.readFileSync(file, 'utf8')) as {
    snapshot: { meta: { node_fields: string[]; node_types: [string[]] } };
    nodes: number[];
    strings: string[];
  };
  const fields = snapshot.snapshot.meta.node_fields;
  const kinds = snapshot.snapshot.meta.node_types[0];
  const width = fields.length;
  const kindAt = fields.indexOf('type');
  const nameAt = fields.indexOf('name');
  const sizeAt = fields.indexOf('self_size');
  const out = new Map<string, Bucket>();
  const nodes = snapshot.nodes;
  for (let i = 0; i < nodes.length; i += width) {
    const kind = kinds[nodes[i + kindAt]];
    const key = kind.includes('string') ? kind : `${kind} ${snapshot.strings[nodes[i + nameAt]].slice(0, 60)}`;
    const bucket = out.get(key) ?? { count: 0, bytes: 0 };
    bucket.count += 1;
    bucket.bytes += nodes[i + sizeAt];
    out.set(key, bucket);
  }
  return out;
}

/** The `top` groups whose shallow size changed most from `before` to `after`, one line each. */
export function heapGrowth(before: string, after: string, top = 15): string[] {
  const a = buckets(before);
  const b = buckets(after);
  const rows: Array<{ key: string; count: number; bytes: number }> = [];
  for (const key of new Set([...a.keys(), ...b.keys()])) {
    const was = a.get(key) ?? { count: 0, bytes: 0 };
    const now = b.get(key) ?? { count: 0, bytes: 0 };
    rows.push({ key, count: now.count - was.count, bytes: now.bytes - was.bytes });
  }
  rows.sort((x, y) => Math.abs(y.bytes) - Math.abs(x.bytes));
  return rows.slice(0, top).map((r) => `${r.bytes >= 0 ? '+' : ''}${r.bytes} B, ${r.count} objects: ${r.key}`);
}
