import 'reflect-metadata';
import { readFileSync } from 'node:fs';
import { ConfigError, loadConfigWithWarnings } from './config/load-config';
import { JsonLogger } from './logging/json-logger';
import { handlerSummary } from './config/startup-summary';
import { startGateway } from './start-gateway';

/** loadConfig(process.env) → startGateway(config) → signal handling. Nothing else. */
async function main(): Promise<void> {
  const path = process.env.GATEWAY_CONFIG;
  let loaded;
  try {
    loaded = loadConfigWithWarnings(process.env, path ? readFileSync(path, 'utf8') : undefined);
  } catch (err) {
    if (!(err instanceof ConfigError) && !isFileError(err)) throw err;
    process.stderr.write(`invalid configuration:\n${err.message}\n`);
    process.exit(1);
  }
  const { config, warnings } = loaded;
  const logger = new JsonLogger(config.log.level, config.log.format);
  for (const warning of warnings) logger.warn({ msg: warning }, 'Config');
  let gateway;
  try {
    gateway = await startGateway(config, logger);
  } catch (err) {
    // e.g. NODE_ID held by a live node (SPEC §11)
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`invalid configuration:\n${err.message}\n`);
    process.exit(1);
  }
  logger.log(
    {
      msg: 'gateway started',
      node_id: config.nodeId,
      public_port: gateway.publicAddress.port,
      internal_port: gateway.internalAddress.port,
      handlers: handlerSummary(config),
    },
    'Main',
  );
  const startedAt = Date.now();
  const exit = (code: number): never => {
    // One line as the process ends (issue 20), so a log reader tells a drain that finished from a crash.
    logger.log({ msg: 'gateway stopped', exit_code: code, uptime_ms: Date.now() - startedAt }, 'Main');
    process.exit(code);
  };
  const stop = (signal: string): void => {
    logger.log({ msg: 'shutdown requested', signal }, 'Main');
    gateway.close().then(
      () => exit(0),
      (err: unknown) => {
        logger.error({ msg: 'shutdown failed', error: err instanceof Error ? err.message : String(err) }, 'Main');
        exit(1);
      },
    );
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

function isFileError(err: unknown): err is NodeJS.ErrnoException {
  return err instanceof Error && 'code' in err && typeof err.code === 'string';
}

main().catch((err: unknown) => {
  process.stderr.write(`gateway failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
