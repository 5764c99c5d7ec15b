'use strict';
// The JSON logger beside pino (issue 21, item 5): CPU per written line and per
// line dropped by the level, each variant in its own process writing to
// /dev/null. Not part of `npm run bench`.
//
//   npm run build && npm i --no-save pino@10.4.0 && node bench/loggers.js
//
// pino is not a dependency (the gateway kept its own logger on these numbers:
// docs/operations.md "Logs").

const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const LINES = 300_000;
const VARIANTS = ['JsonLogger', 'pino async', 'pino sync', 'JsonLogger dropped', 'pino dropped'];

function line() {
  return {
    msg: 'connection opened',
    connection_id: 'nodeA-4f3b2a1c9d8e7f6a5b4c3d2e',
    handler: 'default',
    user_agent_bytes: 120,
  };
}

function loggerFor(variant) {
  if (variant.startsWith('JsonLogger')) {
    const { JsonLogger } = require(path.join(__dirname, '..', 'dist', 'logging', 'json-logger.js'));
    const logger = new JsonLogger('info', 'json');
    return variant.endsWith('dropped')
      ? () => logger.debug(line(), 'Connections')
      : () => logger.log(line(), 'Connections');
  }
  const pino = require('pino');
  const options = { base: undefined, timestamp: pino.stdTimeFunctions.isoTime };
  const logger = (
    variant === 'pino sync' ? pino(options, pino.destination({ dest: 1, sync: true })) : pino(options)
  ).child({ context: 'Connections' });
  return variant.endsWith('dropped') ? () => logger.debug(line()) : () => logger.info(line());
}

function measure(variant) {
  const write = loggerFor(variant);
  for (let i = 0; i < 20_000; i++) write();
  const cpu = process.cpuUsage();
  for (let i = 0; i < LINES; i++) write();
  const used = process.cpuUsage(cpu);
  process.stderr.write(
    `${variant.padEnd(20)} ${(((used.user + used.system) * 1000) / LINES).toFixed(0)} ns CPU per line\n`,
  );
}

if (process.argv[2] === '--child') {
  measure(process.argv[3]);
} else {
  try {
    require.resolve('pino');
  } catch {
    process.stderr.write('pino is not installed: npm i --no-save pino@10.4.0\n');
    process.exit(2);
  }
  const devNull = fs.openSync('/dev/null', 'w');
  for (const variant of VARIANTS) {
    const run = spawnSync(process.execPath, [__filename, '--child', variant], {
      stdio: ['ignore', devNull, 'inherit'],
    });
    if (run.status !== 0) throw new Error(`${variant} failed`);
  }
}
