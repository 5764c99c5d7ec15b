'use strict';
// Benchmark driver: `npm run bench [-- --full] [-- --check] [-- --only rpc,fanout] [-- --cpu-prof]`.
// For each scenario it starts, per target (the baseline, then the gateway),
// a fresh upstream, the server and the load workers, measures, and stops them.
// Prints a table of absolute figures with gateway ÷ baseline ratios, writes
// bench/results/<timestamp>.json and .md. See bench/README.md.

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { BENCH, stopAll, killAllNow, setPlacement, setTracing, setAgainst } = require('./lib/stack');
const { textTable, markdownTable } = require('./lib/report');
const { run, rows } = require('./scenarios');
const { summarize } = require('./profile-summary');
const { summarizeHeap } = require('./heap-summary');

const PROFILES = {
  quick: {
    workers: 4,
    timeLimitMs: 300_000,
    connect: [{ label: 'connect 5k', warmup: 200, count: 5000, rounds: 5, concurrency: 16 }],
    rpc: [{ label: 'rpc 50 conns', connections: 50, inflights: [1, 8], warmupMs: 500, durationMs: 5000, rounds: 5 }],
    fanout: [
      {
        label: 'fanout 1k',
        n: 1000,
        warmup: 20,
        rounds: 5,
        paced: { rate: 40, count: 200 },
        afap: { count: 600, inflight: 4 },
      },
    ],
    lattice: [{ label: 'lattice 1k', n: 1000, warmup: 10, updates: 400, rounds: 5, inflight: 4 }],
    idle: [{ label: 'idle 5k', n: 5000 }],
    api: [{ label: 'api 32 conns', connections: 32, warmupMs: 1000, durationMs: 5_000, rounds: 5 }],
    redis: [{ label: 'redis topologies', rounds: 3, seconds: 5, connections: 8, batch: 50 }],
    cluster: [
      {
        label: 'cluster fanout 1k',
        n: 1000,
        warmup: 20,
        rounds: 5,
        paced: { rate: 40, count: 200 },
        publishes: 600,
        inflight: 4,
      },
    ],
    resume: [
      {
        label: 'resume 1k',
        rounds: 5,
        idle: { n: 5000 },
        fanout: { n: 1000, warmup: 20, afap: { count: 600, inflight: 4 } },
        resumes: { perRound: 1000, concurrency: 16 },
      },
    ],
    deploy: [
      {
        label: 'deploy 3k',
        clients: 3000,
        topics: 300,
        rate: 100,
        leadMs: 2000,
        tailMs: 2000,
        rounds: 3,
        resumes: { perRound: 1000, concurrency: 16 },
      },
    ],
  },
  full: {
    workers: 4,
    timeLimitMs: 1_800_000,
    connect: [{ label: 'connect 10k', warmup: 500, count: 10_000, rounds: 5, concurrency: 16 }],
    rpc: [{ label: 'rpc 50 conns', connections: 50, inflights: [1, 8], warmupMs: 2000, durationMs: 10_000, rounds: 5 }],
    fanout: [
      {
        label: 'fanout 1k',
        n: 1000,
        warmup: 50,
        rounds: 5,
        paced: { rate: 40, count: 200 },
        afap: { count: 2000, inflight: 4 },
      },
      {
        label: 'fanout 10k',
        n: 10_000,
        warmup: 10,
        rounds: 5,
        paced: { rate: 4, count: 40 },
        afap: { count: 300, inflight: 4 },
      },
    ],
    lattice: [{ label: 'lattice 1k', n: 1000, warmup: 20, updates: 1000, rounds: 5, inflight: 4 }],
    idle: [
      { label: 'idle 10k', n: 10_000 },
      { label: 'idle 20k', n: 20_000 },
    ],
    api: [{ label: 'api 32 conns', connections: 32, warmupMs: 2000, durationMs: 20_000, rounds: 5 }],
    redis: [{ label: 'redis topologies', rounds: 5, seconds: 10, connections: 8, batch: 50 }],
    cluster: [
      {
        label: 'cluster fanout 1k',
        n: 1000,
        warmup: 50,
        rounds: 5,
        paced: { rate: 40, count: 200 },
        publishes: 2000,
        inflight: 4,
      },
    ],
    resume: [
      {
        label: 'resume 2k',
        rounds: 5,
        idle: { n: 10_000 },
        fanout: { n: 1000, warmup: 50, afap: { count: 2000, inflight: 4 } },
        resumes: { perRound: 2000, concurrency: 16 },
      },
    ],
    deploy: [
      {
        label: 'deploy 6k',
        clients: 6000,
        topics: 600,
        rate: 200,
        leadMs: 3000,
        tailMs: 3000,
        rounds: 5,
        resumes: { perRound: 2000, concurrency: 16 },
      },
    ],
  },
};
const ORDER = ['connect', 'rpc', 'fanout', 'lattice', 'idle', 'cluster', 'resume', 'deploy', 'api', 'redis'];
/**
 * Scenarios run only when named with --only: api (the /v1 throughput of issue 12), resume (the
 * gateway against itself, SPEC §12, issue 19), deploy (a rolling restart of a 3-node cluster,
 * issue 19) and redis (one Redis, three shards and a Redis Cluster under two nodes, issue 30) have
 * their own targets, and would lengthen the default run.
 */
const ON_REQUEST = new Set(['api', 'resume', 'deploy', 'redis']);
/**
 * Scenarios whose "baseline" column the Socket.IO peer (`--against socketio`) can fill; the
 * others either have no Socket.IO counterpart (lattice) or never use the baseline server
 * (cluster, resume, deploy and api bring their own columns).
 */
const SOCKETIO_PEERS = new Set(['connect', 'rpc', 'fanout', 'idle', 'cluster', 'resume', 'deploy', 'api']);

function parseArgs(argv) {
  const args = {
    profile: 'quick',
    check: false,
    only: null,
    cpuProfile: false,
    workers: null,
    pin: false,
    tracing: false,
    against: null,
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--full') args.profile = 'full';
    else if (a === '--quick') args.profile = 'quick';
    else if (a === '--check') args.check = true;
    else if (a === '--cpu-prof') args.cpuProfile = true;
    else if (a === '--pin') args.pin = true;
    else if (a === '--tracing') args.tracing = true;
    else if (a === '--against') args.against = argv[++i] || '';
    else if (a === '--no-pin') args.pin = false;
    else if (a === '--only') args.only = (argv[++i] || '').split(',').filter(Boolean);
    else if (a.startsWith('--only=')) args.only = a.slice(7).split(',').filter(Boolean);
    else if (a === '--workers') args.workers = Number(argv[++i]);
    else if (a === '--help' || a === '-h') {
      process.stdout.write(
        'usage: npm run bench -- [--full] [--check] [--only connect,rpc,fanout,lattice,idle,cluster,resume,deploy,api,redis] [--cpu-prof] [--pin] [--tracing] [--against dist/main.js | socketio] [--workers N]\n' +
          '  --full      larger profile (fanout 10k, idle 10k and 20k, longer runs)\n' +
          '  --check     exit 1 when a target is missed (or a scenario failed or was skipped)\n' +
          '  --only      run only these scenarios (api, resume, deploy and redis run only when named)\n' +
          '  --cpu-prof  CPU-profile both servers during the measured rounds and heap-snapshot them in idle;\n' +
          '              summaries are printed, files go to bench/results/prof-<timestamp>/\n' +
          '  --pin       server on CPU 0, everything else on the other CPUs (for machines with 4+ CPUs)\n' +
          '  --tracing   the gateway traces every call (OTEL_TRACES_SAMPLER=always_on) to a local OTLP sink\n' +
          '              (bench/otlp-sink.js): compare with a run without it for the cost of tracing\n' +
          "  --against   the baseline column is this build of the gateway (e.g. an earlier commit's\n" +
          '              dist/main.js): ratios are then this gateway ÷ that one, measured in one run;\n' +
          '              `--against socketio`: the baseline column is a Socket.IO 4.8 server\n' +
          '              (baseline/socketio.js) doing the same jobs (connect, rpc, fanout, idle)\n' +
          '  --workers   load-generator processes (default 4)\n',
      );
      process.exit(0);
    } else {
      process.stderr.write(`bench: unknown argument ${a} (try --help)\n`);
      process.exit(2);
    }
  }
  for (const name of args.only || []) {
    if (!ORDER.includes(name)) {
      process.stderr.write(`bench: unknown scenario "${name}"; scenarios: ${ORDER.join(', ')}\n`);
      process.exit(2);
    }
  }
  return args;
}

/** The run's one-line verdict: a scenario that failed or was skipped is never "every target met". */
function verdict(missed, failures, skipped) {
  if (missed.length > 0) return `Targets missed: ${missed.map((r) => `${r.scenario} ${r.metric}`).join('; ')}`;
  if (failures.length > 0) return `${failures.length} scenario(s) FAILED (below); every target measured was met.`;
  if (skipped.length > 0) return 'Every target measured was met; some scenarios were skipped (below).';
  return 'Every target met.';
}

/** Open files one process needs for one scenario config (server: every socket; worker: its share). */
/** Files a server needs beyond one per connection: stdio, listeners, its upstream pool (≤ 100 sockets), IPC, epoll. */
const SERVER_SPARE_FILES = 512;

/** Connections one server holds at most in scenario `name`. */
function connectionsOf(name, cfg) {
  if (name === 'connect') return Math.ceil((cfg.count * (cfg.rounds + 1)) / cfg.rounds) + cfg.warmup;
  if (name === 'rpc' || name === 'api' || name === 'redis') return cfg.connections;
  // resume: the idle set, or the subscribers with the connections being resumed or opened (and their predecessors closing).
  if (name === 'resume') return Math.max(cfg.idle.n, cfg.fanout.n + 2 * cfg.resumes.perRound);
  // deploy: a node may end the rolling restart holding every client, then the cost rounds' connections and their predecessors.
  if (name === 'deploy') return cfg.clients + 1 + 3 * cfg.resumes.perRound;
  return cfg.n;
}

function filesFor(name, cfg, workers) {
  const n = connectionsOf(name, cfg);
  return { n, files: Math.max(n + SERVER_SPARE_FILES, Math.ceil(n / workers) + 256) };
}

function fileLimits() {
  const out = spawnSync('sh', ['-c', 'ulimit -n; ulimit -Hn'], { encoding: 'utf8' }).stdout.trim().split('\n');
  const parse = (s) => (s === 'unlimited' ? Infinity : Number(s));
  return { soft: parse(out[0]), hard: parse(out[1]) };
}

/**
 * Make sure the children can open enough files: when `ulimit -n` is below what
 * the plan needs, re-exec under a raised soft limit (up to the hard limit, or
 * beyond it when the OS allows). Returns the limit the run has; configs that
 * need more are skipped with a clear message (see tooManyFiles).
 */
function ensureFileLimit(plan, workers) {
  const need = Math.max(...plan.flatMap(([name, configs]) => configs.map((c) => filesFor(name, c, workers).files)));
  const { soft, hard } = fileLimits();
  if (soft >= need || process.env.BENCH_FD_RAISED) return soft;
  for (const target of [need, Math.min(need, hard)]) {
    if (target <= soft) continue;
    const raised = spawnSync(
      'sh',
      [
        '-c',
        `ulimit -n ${target} 2>/dev/null || exit 97; exec "$0" "$@"`,
        process.execPath,
        __filename,
        ...process.argv.slice(2),
      ],
      {
        stdio: 'inherit',
        env: { ...process.env, BENCH_FD_RAISED: String(target) },
      },
    );
    if (raised.status !== 97) process.exit(raised.status ?? 1);
  }
  return soft;
}

/**
 * An idle config whose connections do not fit in `limit` open files runs with
 * as many as fit (whole thousands), its label saying so: memory per connection
 * is what idle measures, and it is read the same at 19k as at 20k. Other
 * scenarios are left as they are (tooManyFiles then skips them).
 */
function fitToFiles(name, cfg, workers, limit) {
  if (name !== 'idle' || filesFor(name, cfg, workers).files <= limit) return cfg;
  const n = Math.floor((limit - SERVER_SPARE_FILES) / 1000) * 1000;
  if (n < 1000) return cfg;
  const note = `${cfg.label}: capped at ${n.toLocaleString('en-US')} connections: \`ulimit -n\` is ${limit} (hard limit ${fileLimits().hard}) and ${cfg.n.toLocaleString('en-US')} need about ${filesFor(name, cfg, workers).files} open files`;
  return { ...cfg, n, label: `${cfg.label} (capped ${Math.round(n / 100) / 10}k)`, capNote: note };
}

function tooManyFiles(name, cfg, workers, limit) {
  const { n, files } = filesFor(name, cfg, workers);
  if (files <= limit) return null;
  return (
    `${cfg.label}: skipped: ${n.toLocaleString('en-US')} connections need about ${files} open files per process, but \`ulimit -n\` is ${limit}` +
    ` (hard limit ${fileLimits().hard}). Raise it before running (e.g. \`ulimit -n 65536\`; beyond the hard limit needs root with` +
    ` CAP_SYS_RESOURCE, or /etc/security/limits.conf).`
  );
}

function planFor(args) {
  const profile = PROFILES[args.profile];
  return ORDER.filter((name) => (args.only === null ? !ON_REQUEST.has(name) : args.only.includes(name))).map((name) => [
    name,
    profile[name],
  ]);
}

function machine() {
  const cpus = os.cpus();
  const nproc = spawnSync('nproc', [], { encoding: 'utf8' }).stdout.trim() || String(os.availableParallelism());
  let model = cpus[0] ? cpus[0].model : 'unknown';
  try {
    model = /model name\s*:\s*(.*)/.exec(fs.readFileSync('/proc/cpuinfo', 'utf8'))[1];
  } catch {
    // not Linux: os.cpus() is good enough
  }
  return {
    nproc: Number(nproc),
    cpu: model,
    node: process.version,
    os: `${os.type()} ${os.release()}`,
    memGiB: +(os.totalmem() / 2 ** 30).toFixed(1),
    ulimitN: fileLimits().soft,
  };
}

function stamp() {
  return new Date().toISOString().replace(/[:.]/g, '-').replace('Z', '');
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const profile = PROFILES[args.profile];
  const workers = args.workers || profile.workers;
  const plan = planFor(args);
  const fileLimit = ensureFileLimit(plan, workers);

  const ts = stamp();
  const resultsDir = path.join(BENCH, 'results');
  fs.mkdirSync(resultsDir, { recursive: true });
  const opts = {
    workers,
    openConcurrency: 32,
    openTimeoutMs: 300_000,
    deliveryTimeoutMs: args.profile === 'full' ? 60_000 : 20_000,
    profileDir: null,
    profiles: [],
    heapSnapshots: [],
  };
  if (args.cpuProfile) {
    opts.profileDir = path.join(resultsDir, `prof-${ts}`);
    fs.mkdirSync(opts.profileDir, { recursive: true });
  }
  const command = 'npm run bench' + (process.argv.length > 2 ? ' -- ' + process.argv.slice(2).join(' ') : '');
  const info = machine();
  info.pinned = setPlacement(args.pin);
  setTracing(args.tracing);
  info.tracing = args.tracing;
  if (args.against !== null) setAgainst(args.against);
  info.against = args.against;
  process.stdout.write(
    `bench ${args.profile}: ${info.nproc} CPUs (${info.cpu}), Node ${info.node}, ${workers} load workers\n`,
  );

  const startedAt = Date.now();
  const watchdog = setTimeout(() => {
    process.stderr.write(`bench: time limit of ${profile.timeLimitMs / 1000} s exceeded; stopping\n`);
    killAllNow();
    process.exit(3);
  }, profile.timeLimitMs);

  const results = {};
  const table = [];
  const failures = [];
  const skipped = [];
  const capped = [];
  for (const [name, configs] of plan) {
    for (const planned of configs) {
      let res = {};
      const cfg = fitToFiles(name, planned, workers, fileLimit);
      if (cfg.capNote !== undefined) {
        process.stdout.write(`  ${cfg.capNote}\n`);
        capped.push(cfg.capNote);
      }
      const skip =
        args.against === 'socketio' && !SOCKETIO_PEERS.has(name)
          ? `${cfg.label}: skipped: no Socket.IO peer (--against socketio)`
          : tooManyFiles(name, cfg, workers, fileLimit);
      if (skip !== null) {
        process.stdout.write(`  ${skip}\n`);
        skipped.push(skip);
        results[cfg.label] = { skipped: skip };
        continue;
      }
      try {
        res = await run(name, cfg, opts);
      } catch (err) {
        process.stdout.write('FAILED\n');
        process.stderr.write(`    ${err.stack || err}\n`);
        failures.push(`${cfg.label}: ${err.message.split('\n')[0]}`);
        await stopAll();
      }
      results[cfg.label] = res;
      if (res.baseline || res.gateway) table.push(...rows(name, cfg.label, res));
    }
  }
  clearTimeout(watchdog);
  const elapsedSec = (Date.now() - startedAt) / 1000;

  const text = textTable(table);
  process.stdout.write('\n' + text + '\n\n');
  const missed = table.filter((r) => r.pass === false);
  process.stdout.write(`${elapsedSec.toFixed(0)} s total. ` + verdict(missed, failures, skipped) + '\n');
  if (args.profile === 'quick' && elapsedSec > 180)
    process.stdout.write('note: the quick profile took over 3 minutes on this machine\n');
  for (const f of failures) process.stdout.write(`scenario failed: ${f}\n`);
  for (const f of skipped) process.stdout.write(`scenario ${f}\n`);
  for (const f of capped) process.stdout.write(`scenario ${f}\n`);

  const summaries = opts.profiles.map((p) => ({ ...p, ...summarize(p.file, 15) }));
  for (const s of summaries) process.stdout.write('\n' + s.text + '\n');
  const heaps = opts.heapSnapshots.map((h) => ({ ...h, ...summarizeHeap(h.file, h.connections, 20, h.before) }));
  for (const h of heaps) process.stdout.write('\n' + h.text + '\n');
  if (heaps.length > 0)
    process.stdout.write(
      '\nnote: the heap snapshots inflate RSS: read idle memory figures from a run without --cpu-prof\n',
    );

  const base = path.join(resultsDir, ts);
  const doc = {
    startedAt: new Date(startedAt).toISOString(),
    profile: args.profile,
    command,
    machine: info,
    workers,
    elapsedSec,
    results,
    rows: table,
    missed: missed.map((r) => `${r.scenario} ${r.metric}`),
    failures,
    skipped,
    capped,
    profiles: summaries.map(({ text: _, ...s }) => s),
    heapSnapshots: heaps.map(({ text: _, ...h }) => h),
  };
  fs.writeFileSync(base + '.json', JSON.stringify(doc, null, 2));
  const md = [
    `Run ${doc.startedAt} (${args.profile} profile, ${elapsedSec.toFixed(0)} s)`,
    '',
    `Machine: ${info.nproc} CPUs, ${info.cpu}, ${info.memGiB} GiB, ${info.os}; Node ${info.node}; ${workers} load workers${info.pinned ? '; server pinned to CPU 0' : ''}.`,
    `Command: \`${command}\``,
    '',
    markdownTable(table),
    '',
    ...failures.map((f) => `Failed: ${f}`),
    ...skipped.map((f) => `Skipped: ${f}`),
    ...capped.map((f) => `Capped: ${f}`),
    '',
  ].join('\n');
  fs.writeFileSync(base + '.md', md);
  process.stdout.write(`\nresults: ${path.relative(process.cwd(), base)}.json (.md)\n`);

  if (failures.length > 0) process.exit(1);
  if (args.check && (missed.length > 0 || skipped.length > 0 || failures.length > 0)) process.exit(1);
}

process.on('SIGINT', () => {
  killAllNow();
  process.exit(130);
});

main().catch((err) => {
  process.stderr.write(`bench: ${err.stack || err}\n`);
  killAllNow();
  process.exit(1);
});
