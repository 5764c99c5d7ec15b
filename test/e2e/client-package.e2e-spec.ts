import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { PROJECT_ROOT } from './harness/child-gateway';
import { TestGateway, startTestGateway } from './harness/gateway';

const run = promisify(execFile);
const CLIENT_DIR = path.join(PROJECT_ROOT, 'client');

// client/build.js is plain JavaScript, run as `npm run build` in client/ runs it.
const { buildClient } = require('../../client/build') as {
  buildClient: () => Promise<{ esm: string; cjs: string; types: string }>;
};

/** A script that connects with the built package, makes one call and prints its result. */
const SCRIPT = (load: string) => `
${load}
const client = createClient(process.argv[1] + '/?user=pkg', { WebSocket });
client.connect()
  .then((hello) => client.call('pkg.echo', [hello.user_id]))
  .then((result) => { console.log(JSON.stringify(result)); client.close(); })
  .catch((err) => { console.error(err); process.exit(1); });
`;

/** TypeScript using the package's types as an app would, from ESM (.mts) and CommonJS (.cts). */
const CONSUMER = `
import { createClient, isCallError, FatalError, type CallError, type PresenceStatus } from '@lattice-gateway/client';
const client = createClient('ws://127.0.0.1/?user=a');
client.call<{ sent: number }>('chat.send', ['lobby', 'hi']).then((r) => r.sent.toFixed(), (e: unknown) => {
  if (isCallError(e) && e.kind === 'http_error') return e.status.toFixed();
  if (e instanceof FatalError) return e.code.toFixed();
  return undefined;
});
client.lattice('rooms').onChange((changes) => changes.map((c) => c.key + c.variables.join()));
const status: PresenceStatus | undefined = client.users().status('bob');
const failure: CallError | null = null;
export { status, failure };
`;

/** The ```ts blocks of `file`, within the section under `heading` when given (up to the next heading of its level). */
function tsBlocks(file: string, heading?: string): string[] {
  let text = readFileSync(path.join(PROJECT_ROOT, file), 'utf8');
  if (heading !== undefined) {
    const start = text.indexOf(`\n${heading}\n`);
    if (start < 0) throw new Error(`${file} has no heading "${heading}"`);
    const rest = text.slice(start + heading.length + 2);
    const end = rest.search(new RegExp(`^${heading.split(' ')[0]} `, 'm'));
    text = end < 0 ? rest : rest.slice(0, end);
  }
  return [...text.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => m[1]);
}

/** The published shape of client/: ESM and CommonJS bundles with no runtime dependency, and .d.ts files. */
describe('client package build', () => {
  let t: TestGateway;
  let out: { esm: string; cjs: string; types: string };
  beforeAll(async () => (out = await buildClient()), 60_000);
  beforeEach(async () => (t = await startTestGateway()));
  afterEach(() => t.close());

  it('declares its entry points and no runtime dependency', () => {
    const pkg = JSON.parse(readFileSync(path.join(CLIENT_DIR, 'package.json'), 'utf8')) as Record<string, unknown>;
    expect(pkg.dependencies).toBeUndefined();
    expect(pkg.exports).toEqual({
      '.': { types: './dist/types/client/src/index.d.ts', import: './dist/index.mjs', require: './dist/index.cjs' },
      './package.json': './package.json',
    });
    expect([out.esm, out.cjs, out.types].map((file) => path.relative(CLIENT_DIR, file))).toEqual([
      'dist/index.mjs',
      'dist/index.cjs',
      'dist/types/client/src/index.d.ts',
    ]);
    expect(readFileSync(out.types, 'utf8')).toContain('createClient');
  });

  it('bundles the gateway CRDT code in and imports nothing at run time', () => {
    for (const file of [out.esm, out.cjs]) {
      const text = readFileSync(file, 'utf8');
      expect([file, /\brequire\(|^\s*import\s|\bimport\(/m.exec(text)?.[0] ?? null]).toEqual([file, null]);
      expect(text).toContain('function mergeVariable(');
    }
  });

  it('gives TypeScript apps its types, from ESM and CommonJS (moduleResolution node16)', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'client-consumer-'));
    try {
      mkdirSync(path.join(dir, 'node_modules', '@lattice-gateway'), { recursive: true });
      symlinkSync(CLIENT_DIR, path.join(dir, 'node_modules', '@lattice-gateway', 'client'), 'dir');
      writeFileSync(path.join(dir, 'app.mts'), CONSUMER);
      writeFileSync(path.join(dir, 'app.cts'), CONSUMER);
      const options = {
        module: 'node16',
        moduleResolution: 'node16',
        strict: true,
        noEmit: true,
        lib: ['ES2022', 'DOM'],
        types: [],
      };
      writeFileSync(
        path.join(dir, 'tsconfig.json'),
        JSON.stringify({ compilerOptions: options, files: ['app.mts', 'app.cts'] }),
      );
      const tsc = require.resolve('typescript/bin/tsc', { paths: [PROJECT_ROOT] });
      const result = spawnSync(process.execPath, [tsc, '-p', dir], { encoding: 'utf8', timeout: 60_000 });
      expect([result.status, result.stdout]).toEqual([0, '']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  /**
   * The install path of docs/sdk.md and the README, as a user follows it: `npm pack` in client/ (its
   * prepack script is the build above, so scripts are skipped here), a new project (`npm init -y`,
   * `tsc --init`, nothing else), `npm install <tarball>`; then the TypeScript snippets of both documents,
   * read from their code blocks, compile with that default tsconfig: ESM ones as `.mts` files, CommonJS
   * ones (`import x = require(...)`) as the project's own `.ts` files (npm init's package is CommonJS).
   */
  it('installs with npm pack into a new project, whose default tsconfig compiles the documented snippets', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'client-install-'));
    const npm = { encoding: 'utf8' as const, timeout: 60_000, stdio: 'pipe' as const };
    try {
      const packed = path.join(dir, 'packed');
      const app = path.join(dir, 'app');
      mkdirSync(packed);
      mkdirSync(app);
      execFileSync('npm', ['pack', '--ignore-scripts', '--pack-destination', packed], { ...npm, cwd: CLIENT_DIR });
      const [tarball] = readdirSync(packed).map((name) => path.join(packed, name));
      execFileSync('npm', ['init', '-y'], { ...npm, cwd: app });
      execFileSync('npm', ['install', '--offline', '--no-audit', '--no-fund', tarball], { ...npm, cwd: app });
      const tsc = require.resolve('typescript/bin/tsc', { paths: [PROJECT_ROOT] });
      execFileSync(process.execPath, [tsc, '--init'], { ...npm, cwd: app });

      const snippets = [...tsBlocks('README.md', '## The client SDK'), ...tsBlocks('docs/sdk.md')];
      const isCommonJs = (code: string): boolean => /^import \w+ = require\(/m.test(code);
      expect([snippets.length >= 3, snippets.some(isCommonJs), snippets.some((code) => !isCommonJs(code))]).toEqual([
        true,
        true,
        true,
      ]);
      snippets.forEach((code, i) =>
        writeFileSync(path.join(app, `snippet${i}.${isCommonJs(code) ? 'ts' : 'mts'}`), code),
      );
      const result = spawnSync(process.execPath, [tsc, '--noEmit', '-p', app], { encoding: 'utf8', timeout: 60_000 });
      expect([result.status, result.stdout]).toEqual([0, '']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it.each([
    [
      'ESM',
      [
        '--input-type=module',
        '-e',
        SCRIPT(
          `import WebSocket from 'ws';\nimport { createClient } from ${JSON.stringify('./client/dist/index.mjs')};`,
        ),
      ],
    ],
    [
      'CommonJS',
      ['-e', SCRIPT(`const WebSocket = require('ws');\nconst { createClient } = require('./client/dist/index.cjs');`)],
    ],
  ])('works from %s in Node with ws', async (_name, args) => {
    const { stdout } = await run(process.execPath, [...args, t.wsUrl], { cwd: PROJECT_ROOT, timeout: 15_000 });
    expect(JSON.parse(stdout)).toEqual({ args: ['pkg'], kwargs: {} });
  });
});
