import { spawnSync } from 'node:child_process';

/**
 * The path of an operator tool (`promtool`, `prometheus`) on PATH, or null.
 * Under CI=true a missing tool throws, so the spec fails instead of skipping:
 * `.ci/run` installs the Debian package `prometheus`, which carries both.
 */
export function operatorTool(name: string): string | null {
  const found = spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' });
  const path = found.status === 0 ? found.stdout.trim() : null;
  if (path === null && process.env.CI === 'true') {
    throw new Error(`${name} is not installed: apt-get install -y prometheus (.ci/run does it when missing)`);
  }
  return path;
}

/** `describe` when the tool exists, `describe.skip` (with a note on stderr) otherwise. */
export function describeWithTool(name: string): jest.Describe {
  if (operatorTool(name) !== null) return describe;
  process.stderr.write(`skipping: ${name} is not installed (apt-get install -y prometheus)\n`);
  return describe.skip;
}
