'use strict';
// Preloaded into the gateway under test (`node --expose-gc -r gc-probe.js dist/main.js`):
// on SIGUSR2 it runs a full GC and prints the used heap as one JSON line. Lets the
// reliability suite sample "heap after GC" without the inspector and without any
// hook in the product code. Log lines still queued for stdout (a pipe, written
// asynchronously) are heap too: the probe waits until they are flushed.
function measure() {
  global.gc();
  global.gc();
  const usage = process.memoryUsage();
  process.stdout.write(JSON.stringify({ msg: 'gc probe', heap_used: usage.heapUsed, rss: usage.rss }) + '\n');
}

process.on('SIGUSR2', () => {
  if (process.stdout.writableLength > 0) process.stdout.once('drain', measure);
  else measure();
});
