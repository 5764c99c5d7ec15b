'use strict';
// Preloaded into the server under test (`node --expose-gc -r bench/probe.js
// dist/main.js`, same for the baseline) so the driver can read its heap and
// CPU time and take a CPU profile over IPC without adding anything to src/.
// RSS is read by the driver from /proc/<pid>/status; this adds the V8 view.
//
// Messages (from bench/run.js over the fork IPC channel), each answered with
// {probe: <same>, id, ...}:
//   {probe: 'mem', gc: true}          → process.memoryUsage() after two full GCs, plus the young
//                                       generation's resident size (youngPhysical)
//   {probe: 'cpu'}                    → process.cpuUsage() (µs, user + system)
//   {probe: 'prof-start'}             → start the V8 CPU profiler (sampling 200 µs)
//   {probe: 'prof-stop', file}        → stop it and write the .cpuprofile to `file`
//   {probe: 'heap-snapshot', file}    → write a V8 heap snapshot to `file`
//   {probe: 'loop-start'}             → start measuring event-loop delay (monitorEventLoopDelay, resolution 1 ms)
//   {probe: 'loop-stop'}              → stop it: {p50Ms, p99Ms, maxMs} since loop-start

if (typeof process.send === 'function') {
  const fs = require('node:fs');
  const v8 = require('node:v8');
  let session = null;
  let loopDelay = null;

  const post = (method, params) =>
    new Promise((resolve, reject) =>
      session.post(method, params || {}, (err, res) => (err ? reject(err) : resolve(res))),
    );

  const handlers = {
    mem(msg) {
      if (msg.gc && typeof global.gc === 'function') {
        global.gc();
        global.gc();
      }
      // After a full GC the young generation is empty, but V8 keeps the pages it grew
      // to during a burst of allocation (up to 32 MiB) until its memory reducer runs.
      const spaces = v8.getHeapSpaceStatistics();
      const young = spaces.find((s) => s.space_name === 'new_space');
      const bySpace = Object.fromEntries(
        spaces.map((s) => [s.space_name, { physical: s.physical_space_size, used: s.space_used_size }]),
      );
      return {
        ...process.memoryUsage(),
        youngPhysical: young ? young.physical_space_size : 0,
        youngUsed: young ? young.space_used_size : 0,
        spaces: bySpace,
      };
    },
    cpu() {
      return process.cpuUsage();
    },
    'loop-start'() {
      loopDelay = require('node:perf_hooks').monitorEventLoopDelay({ resolution: 1 });
      loopDelay.enable();
      return {};
    },
    'loop-stop'() {
      if (loopDelay === null) return { error: 'not measuring' };
      loopDelay.disable();
      const ms = (ns) => ns / 1e6;
      const result = {
        p50Ms: ms(loopDelay.percentile(50)),
        p99Ms: ms(loopDelay.percentile(99)),
        maxMs: ms(loopDelay.max),
      };
      loopDelay = null;
      return result;
    },
    'heap-snapshot'(msg) {
      if (typeof global.gc === 'function') global.gc();
      return { file: v8.writeHeapSnapshot(msg.file) };
    },
    async 'prof-start'() {
      const inspector = require('node:inspector');
      session = new inspector.Session();
      session.connect();
      await post('Profiler.enable');
      await post('Profiler.setSamplingInterval', { interval: 200 });
      await post('Profiler.start');
      return {};
    },
    async 'prof-stop'(msg) {
      if (session === null) return { error: 'not profiling' };
      const { profile } = await post('Profiler.stop');
      session.disconnect();
      session = null;
      fs.writeFileSync(msg.file, JSON.stringify(profile));
      return { file: msg.file };
    },
  };

  process.on('message', (msg) => {
    if (msg === null || typeof msg !== 'object' || typeof msg.probe !== 'string') return;
    const handler = handlers[msg.probe];
    if (handler === undefined) return;
    Promise.resolve()
      .then(() => handler(msg))
      .then(
        (result) => process.send({ ...result, probe: msg.probe, id: msg.id }),
        (err) => process.send({ probe: msg.probe, id: msg.id, error: String(err && err.message) }),
      );
  });
  // The driver went away: do not linger as an orphan holding ports.
  process.on('disconnect', () => process.exit(0));
}
