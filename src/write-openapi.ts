import 'reflect-metadata';
import { writeFileSync } from 'node:fs';
import { loadConfig } from './config/load-config';
import { JsonLogger } from './logging/json-logger';
import { startGateway } from './start-gateway';

/**
 * `npm run openapi`: start the gateway on loopback ports, read the document it
 * serves at GET /openapi.json, and write it (formatted) to the file named by
 * the first argument (docs/openapi.json). The upstream is never contacted.
 */
async function main(file: string): Promise<void> {
  const config = loadConfig({
    UPSTREAM_URL: 'http://127.0.0.1:9',
    HOST: '127.0.0.1',
    PORT: '0',
    BACKEND_API_HOST: '127.0.0.1',
    BACKEND_API_PORT: '0',
    LOG_LEVEL: 'error',
    SHUTDOWN_GRACE: '0s',
  });
  const gateway = await startGateway(config, new JsonLogger('error', 'json'));
  try {
    const res = await fetch(`http://127.0.0.1:${gateway.internalAddress.port}/openapi.json`);
    if (res.status !== 200) throw new Error(`GET /openapi.json answered ${res.status}`);
    writeFileSync(file, JSON.stringify(await res.json(), null, 2) + '\n');
  } finally {
    await gateway.close();
  }
}

main(process.argv[2] ?? 'docs/openapi.json').catch((err: unknown) => {
  process.stderr.write(`openapi: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
