import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Destination, GatewayConfig } from './gateway-config';
import { ConfigError, loadConfig } from './load-config';

/** What the configuration specs share: an environment, the example file, and how a failure reads. */
export type Env = Record<string, string | undefined>;

export const BASE: Env = { UPSTREAM_URL: 'http://upstream.test:8000' };
export const EXAMPLE_YAML = readFileSync(join(__dirname, '../../config/gateway.example.yaml'), 'utf8');

/** The problem lines of a configuration that must fail. */
export function problemsOf(env: Env, fileText?: string): readonly string[] {
  try {
    loadConfig(env, fileText);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

export function destination(config: GatewayConfig, name = 'default'): Destination {
  const found = config.destinations.get(name);
  if (!found) throw new Error(`no destination ${name}`);
  return found;
}
