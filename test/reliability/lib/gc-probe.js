'use strict';
// Preloaded into the gateway under test (`node --expose-gc -r gc-probe.js dist/main.js`):
// on SIGUSR2 it runs a full GC and prints the used heap as one JSON line. Lets the
// reliability suite sample "heap after GC" without the inspector and without any
// hook in the product code. Log lines still queued for stdout (a pipe, written
// asynchronously) are heap too: the probe waits until they are flushed.
//
// With GC_PROBE_SNAPSHOT_DIR set, a probe also writes a heap snapshot there when the
// suite asked for one (a file named `wanted` in that folder), or at every probe with
// GC_PROBE_SNAPSHOT_ALL=1 (a diagnostic aid, never set by the suite).
const fs = require('node:fs');
const v8 = require('node:v8');

let snapshots = 0;

function snapshotWanted(dir) {
  if (process.env.GC_PROBE_SNAPSHOT_ALL === '1') return true;
  if (!fs.existsSync(`${dir}/wanted`)) return false;
  fs.rmSync(`${dir}/wanted`);
  return true;
}

function measure() {
  global.gc();
  global.gc();
  const usage = process.memoryUsage();
  // Compiled code grows as V8 optimizes more functions under load; it is reported apart
  // so a check on "state kept" can leave it out.
  let codeUsed = 0;
  for (const space of v8.getHeapSpaceStatistics()) {
    if (space.space_name.includes('code')) codeUsed += space.space_used_size;
  }
  const dir = process.env.GC_PROBE_SNAPSHOT_DIR;
  let snapshot;
  if (dir && snapshotWanted(dir)) {
    snapshots += 1;
    snapshot = v8.writeHeapSnapshot(`${dir}/probe-${snapshots}.heapsnapshot`);
  }
  const line = { msg: 'gc probe', heap_used: usage.heapUsed, code_used: codeUsed, rss: usage.rss, snapshot };
  process.stdout.write(JSON.stringify(line) + '\n');
}

process.on('SIGUSR2', () => {
  if (process.stdout.writableLength > 0) process.stdout.once('drain', measure);
  else measure();
});
