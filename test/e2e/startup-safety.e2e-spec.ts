import { spawn } from 'node:child_process';
import * as path from 'node:path';
import { ChildExit, ChildGateway, PROJECT_ROOT, buildGateway } from './harness/child-gateway';
import { FakeUpstream } from './harness/fake-upstream';
import { within } from './harness/wait';

const MAIN_JS = path.join(PROJECT_ROOT, 'dist', 'main.js');
const START_MS = 15_000;

/** `node dist/main.js` with exactly `env` (PATH aside), expected to exit at start: its exit and stderr. */
async function failedStart(env: Record<string, string>): Promise<ChildExit & { stderr: string; stdout: string }> {
  const child = spawn(process.execPath, [MAIN_JS], {
    cwd: PROJECT_ROOT,
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  let stdout = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  const exit = await within(
    new Promise<ChildExit>((resolve) => child.once('close', (code, signal) => resolve({ code, signal }))),
    `dist/main.js to exit at start (stdout so far: ${stdout.slice(0, 300)})`,
    START_MS,
  ).catch((err: unknown) => {
    child.kill('SIGKILL');
    throw err;
  });
  return { ...exit, stderr, stdout };
}

/** Issue 20 §1: an open backend API is refused, an explicit opt-out is warned, a misspelt setting is named. */
describe('start-up safety (issue 20)', () => {
  let upstream: FakeUpstream;
  let gateway: ChildGateway | undefined;

  beforeAll(() => buildGateway(120_000), 120_000);
  beforeEach(async () => (upstream = await FakeUpstream.start()));
  afterEach(async () => {
    await gateway?.stop();
    gateway = undefined;
    await upstream.close();
  });

  it('refuses to start when the internal listener binds a non-loopback address without BACKEND_API_TOKEN, in one line saying how to fix it (and one naming the typo)', async () => {
    // A misspelt token is no token: the typo does not open /v1, and the refusal names it (issue 34).
    const exit = await failedStart({
      UPSTREAM_URL: upstream.url,
      PORT: '0',
      BACKEND_API_PORT: '0',
      BACKEND_API_HOST: '0.0.0.0',
      BACKEND_API_TOKN: 'hunter2',
    });
    expect(exit).toMatchObject({ code: 1, signal: null });
    expect(exit.stderr.trimEnd().split('\n')).toEqual([
      'invalid configuration:',
      'BACKEND_API_TOKEN: is required because BACKEND_API_HOST "0.0.0.0" is not a loopback address ' +
        '(set BACKEND_API_TOKEN to a secret, or BACKEND_API_HOST=127.0.0.1, or BACKEND_API_INSECURE=true to accept an open /v1)',
      'BACKEND_API_TOKN: is not a setting; did you mean BACKEND_API_TOKEN?',
    ]);
    expect(exit.stdout).not.toContain('gateway started');
    expect(exit.stdout + exit.stderr).not.toContain('hunter2');
  }, 40_000);

  it('starts on a non-loopback address with BACKEND_API_TOKEN and asks for it on /v1', async () => {
    const g = (gateway = await ChildGateway.start(
      {
        UPSTREAM_URL: upstream.url,
        BACKEND_API_HOST: '0.0.0.0',
        BACKEND_API_TOKEN: 'b71f0c9e4a2d8635e1c7',
        LOG_LEVEL: 'info',
      },
      START_MS,
    ));
    expect(
      (
        await fetch(`${g.apiUrl}/v1/publish/t`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json' },
          body: '{}',
        })
      ).status,
    ).toBe(401);
    expect(g.logs.filter((entry) => entry.level === 'warn')).toEqual([]);
  }, 40_000);

  it('starts open with BACKEND_API_INSECURE=true, with a warning at start', async () => {
    const g = (gateway = await ChildGateway.start(
      { UPSTREAM_URL: upstream.url, BACKEND_API_HOST: '0.0.0.0', BACKEND_API_INSECURE: 'true', LOG_LEVEL: 'info' },
      START_MS,
    ));
    expect(
      (
        await fetch(`${g.apiUrl}/v1/publish/t`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json' },
          body: '{}',
        })
      ).status,
    ).toBe(204);
    expect(g.logs).toContainEqual(
      expect.objectContaining({
        level: 'warn',
        context: 'Config',
        msg: expect.stringMatching(
          /^BACKEND_API_INSECURE: the backend API \(\/v1\) listens on "0\.0\.0\.0" without BACKEND_API_TOKEN/,
        ),
      }),
    );
  }, 40_000);

  it('warns at start about an environment variable that looks like a misspelt setting, naming the setting and never the value', async () => {
    const g = (gateway = await ChildGateway.start(
      { UPSTREAM_URL: upstream.url, REDIS_ULR: 'redis://:hunter2@cache:6379', PING_INTREVAL: '5s', LOG_LEVEL: 'info' },
      START_MS,
    ));
    const warnings = g.logs.filter((entry) => entry.level === 'warn').map((entry) => entry.msg);
    expect(warnings.sort()).toEqual([
      'PING_INTREVAL: is not a setting; did you mean PING_INTERVAL?',
      'REDIS_ULR: is not a setting; did you mean REDIS_URL?',
    ]);
    expect(JSON.stringify(g.logs)).not.toContain('hunter2');
  }, 40_000);
});
