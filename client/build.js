'use strict';
/**
 * Builds the package into dist/: index.mjs (ESM) and index.cjs (CommonJS)
 * bundled by esbuild, which inlines src/lattice/crdt.ts of the gateway (the
 * one CRDT implementation), and the .d.ts files from tsc. `node build.js`;
 * the repository's tests call buildClient().
 */
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const esbuild = require('esbuild');

const ROOT = __dirname;
const DIST = path.join(ROOT, 'dist');

/** Clean dist/ and build it; resolves the paths written. */
async function buildClient() {
  fs.rmSync(DIST, { recursive: true, force: true });
  const common = {
    entryPoints: [path.join(ROOT, 'src', 'index.ts')],
    bundle: true,
    platform: 'neutral',
    target: ['es2020'],
    sourcemap: true,
    logLevel: 'warning',
  };
  await esbuild.build({ ...common, format: 'esm', outfile: path.join(DIST, 'index.mjs') });
  await esbuild.build({ ...common, format: 'cjs', outfile: path.join(DIST, 'index.cjs') });
  const tsc = require.resolve('typescript/bin/tsc', { paths: [ROOT] });
  execFileSync(process.execPath, [tsc, '-p', path.join(ROOT, 'tsconfig.json')], { cwd: ROOT, stdio: 'pipe' });
  return {
    esm: path.join(DIST, 'index.mjs'),
    cjs: path.join(DIST, 'index.cjs'),
    types: path.join(DIST, 'types', 'client', 'src', 'index.d.ts'),
  };
}

module.exports = { buildClient };

if (require.main === module) {
  buildClient().then(
    (out) =>
      console.log(
        `built ${Object.values(out)
          .map((file) => path.relative(ROOT, file))
          .join(', ')}`,
      ),
    (err) => {
      console.error(err.stdout ? String(err.stdout) : err.message);
      process.exit(1);
    },
  );
}
