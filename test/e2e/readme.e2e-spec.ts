import { execFile, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { PROJECT_ROOT } from './harness/child-gateway';
import { startTestGateway } from './harness/gateway';
import { freePort } from './harness/ports';
import { waitFor, within } from './harness/wait';
import { Frame, WsClient } from './harness/ws-client';

/**
 * The README keeps its promises: its quick start, its five-minute tour and
 * the `/v1` commands of docs/backend.md are read from their code blocks (not
 * copied here) and run against the demo as a reader would run them, with the
 * demo on free ports instead of 8080/8081/9000. `curl` runs for real. The
 * minimal backend of "Writing a backend" runs behind a real gateway. When a
 * documented command stops working, or its documented output changes, this
 * fails and says which.
 */
const run = promisify(execFile);
const README = readFileSync(path.join(PROJECT_ROOT, 'README.md'), 'utf8');
const BACKEND_DOC = readFileSync(path.join(PROJECT_ROOT, 'docs/backend.md'), 'utf8');
const QUERIES_DOC = readFileSync(path.join(PROJECT_ROOT, 'docs/queries.md'), 'utf8');

interface Demo {
  wsUrl: string;
  apiUrl: string;
  stop(): Promise<void>;
}
// The demo is plain JavaScript (examples/), loaded as `npm run demo` loads it; dist/ is built by the e2e globalSetup.
const { startDemo } = require('../../examples/demo') as {
  startDemo: (options: Record<string, unknown>) => Promise<Demo>;
};

/** The text of the section under `heading`, up to the next heading of the same level. */
function section(text: string, heading: string): string {
  const start = text.indexOf(`\n${heading}\n`);
  if (start < 0) throw new Error(`no heading "${heading}"`);
  const rest = text.slice(start + heading.length + 2);
  const end = rest.search(new RegExp(`^${heading.split(' ')[0]} `, 'm'));
  return end < 0 ? rest : rest.slice(0, end);
}

/** The fenced code blocks of `text`, with their language ('' for none). */
function codeBlocks(text: string): Array<{ lang: string; code: string }> {
  return [...text.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)].map((m) => ({ lang: m[1], code: m[2] }));
}

const TOUR = codeBlocks(section(README, '## Five-minute tour'));
const blockWith = (blocks: typeof TOUR, needle: string): string => {
  const block = blocks.find(({ code }) => code.includes(needle));
  if (block === undefined) throw new Error(`no code block with "${needle}"`);
  return block.code;
};
/** `< [...]` lines of a transcript as frames, `> [...]` lines as what to send, in order. */
const transcript = (code: string): Array<{ dir: '<' | '>'; frame: unknown }> =>
  code
    .split('\n')
    .filter((line) => /^[<>] /.test(line))
    .map((line) => ({ dir: line[0] as '<' | '>', frame: JSON.parse(line.slice(2)) }));

/** Every key of every object in a parsed JSON value. */
function keysOf(value: unknown, into = new Set<string>()): Set<string> {
  if (Array.isArray(value)) for (const item of value) keysOf(item, into);
  else if (typeof value === 'object' && value !== null)
    for (const [key, item] of Object.entries(value)) keysOf(item, into.add(key));
  return into;
}

const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Run a documented shell block with bash, its 127.0.0.1:8081 the demo's internal listener and its CID set. */
async function runShell(code: string, apiUrl: string, cid: string): Promise<string[]> {
  const script = code
    .split('http://127.0.0.1:8081')
    .join(apiUrl)
    .replace(/^CID=.*$/m, `CID=${cid}`);
  expect(script).toContain(`CID=${cid}`);
  const { stdout } = await run('bash', ['-euo', 'pipefail', '-c', script], { timeout: 15_000 });
  return stdout.split('\n').filter((line) => line !== '');
}

describe('README', () => {
  it('gives the two commands of its first screen, and package.json has their scripts', () => {
    const start = section(README, '## Start here');
    expect(start).toContain('`npm ci && npm run demo`');
    expect(start).toContain('`npm test`');
    const scripts = JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8')).scripts;
    expect([typeof scripts.demo, typeof scripts.test]).toEqual(['string', 'string']);
    expect(TOUR[0].code.trim()).toBe('npm ci && npm run demo');
  });

  describe('against the demo', () => {
    let demo: Demo;
    const lines: string[] = [];
    const clients: WsClient[] = [];
    beforeAll(async () => {
      demo = await startDemo({ port: 0, apiPort: 0, backendPort: 0, onLine: (line: string) => lines.push(line) });
    }, 30_000);
    afterAll(async () => {
      await Promise.all(clients.map((client) => client.close()));
      await demo.stop();
    });

    /** The wscat line's URL and subprotocol, opened on the demo's port; resolves the client and its connection id. */
    async function openAsInTour(): Promise<{ client: WsClient; cid: string }> {
      const wscat = /^npx wscat -s (\S+) -c '([^']+)'$/m.exec(blockWith(TOUR, 'npx wscat'));
      if (wscat === null) throw new Error('the tour has no `npx wscat -s <subprotocol> -c <url>` line');
      const url = new URL(wscat[2]);
      expect(url.origin).toBe('ws://127.0.0.1:8080');
      const before = lines.length;
      const client = await WsClient.connect(demo.wsUrl, {
        protocols: [wscat[1]],
        path: url.pathname,
        query: url.search.slice(1),
      });
      clients.push(client);
      // The tour tells the reader to copy the id from this line of the demo's output.
      const printed = await waitFor(
        () =>
          lines
            .slice(before)
            .map((line) => /connection authorized: user alice, connection_id (\S+)/.exec(line))
            .find((match) => match !== null),
        'the demo to print "connection authorized: user alice, connection_id <id>"',
      );
      return { client, cid: printed![1] };
    }

    /** Play a transcript: send its `>` frames, expect its `<` frames in order. */
    async function play(client: WsClient, code: string): Promise<void> {
      for (const { dir, frame } of transcript(code)) {
        if (dir === '>') client.send(frame as Frame);
        else expect(await client.next(5000)).toEqual(frame);
      }
    }

    it('runs the five-minute tour: wscat as alice, then the curl commands, and alice gets the message', async () => {
      const { client, cid } = await openAsInTour();
      const session = TOUR.find(({ lang, code }) => lang === '' && code.includes('["hello"'));
      await play(client, session!.code);

      const curlBlock = blockWith(TOUR, 'curl ');
      const curls = curlBlock.split('\n').filter((line) => line.startsWith('curl '));
      expect(curls.every((line) => line.includes(`-w '%{http_code}\\n'`))).toBe(true);
      expect(await runShell(curlBlock, demo.apiUrl, cid)).toEqual(curls.map(() => '204'));
      await play(client, blockWith(TOUR, '["message"'));
    });

    it("runs docs/backend.md's /v1 commands: each prints 204, and the client gets the publish", async () => {
      const { client, cid } = await openAsInTour();
      expect(await client.next(5000)).toEqual(['hello', {}, { user_id: 'alice', username: 'alice' }]);
      const block = blockWith(codeBlocks(section(BACKEND_DOC, '## `/v1`: pushing to clients')), 'curl ');
      const curls = block.split('\n').filter((line) => line.startsWith('curl '));
      expect(curls.length).toBeGreaterThanOrEqual(10);
      expect(await runShell(block, demo.apiUrl, cid)).toEqual(curls.map(() => '204'));
      // The block's first comment says what the subscribed client receives from its publish.
      const promised = /the client gets (\["message".*\])\)$/m.exec(block);
      expect(await client.next(5000)).toEqual(JSON.parse(promised![1]));
      // ...and its last commands end the connection (close 4403).
      expect(await client.closed()).toEqual({ code: 4403, reason: 'disconnected' });
    });

    it("runs docs/backend.md's batch example and answers what its comment shows", async () => {
      const { client, cid } = await openAsInTour();
      expect((await client.next(5000))[0]).toBe('hello');
      const block = blockWith(codeBlocks(section(BACKEND_DOC, '## Batch (`POST /v1/batch`)')), '/v1/batch');
      const command = block.replace(/^#.*\n?/gm, '');
      const shown = block
        .split('\n')
        .filter((line) => line.startsWith('# '))
        .map((line) => line.slice(2))
        .join('');
      // A message cut with "…" in the comment matches any message that starts the same way.
      const expected = JSON.parse(shown, (_key, value: unknown) =>
        typeof value === 'string' && value.endsWith('…')
          ? expect.stringMatching(`^${escapeRegExp(value.slice(0, -1))}`)
          : value,
      );
      const [answer] = await runShell(`API=http://127.0.0.1:8081\nCID=\n${command}`, demo.apiUrl, cid);
      expect(JSON.parse(answer)).toEqual(expected);
    });

    it("runs docs/queries.md's GET queries: each answers JSON with every field its comment shows", async () => {
      const { client, cid } = await openAsInTour();
      expect((await client.next(5000))[0]).toBe('hello');
      const lines = blockWith(codeBlocks(QUERIES_DOC), '/v1/info').split('\n');
      const setup = lines.filter((line) => /^[A-Z]+=/.test(line)).join('\n');
      // Each curl line, and the `# ...` lines under it: the answer as the document shows it (shortened with ...).
      const queries = lines.flatMap((line, i) => {
        if (!line.startsWith('curl ')) return [];
        const comment = lines.slice(i + 1).findIndex((next) => !next.startsWith('#'));
        const shown = lines.slice(i + 1, comment < 0 ? undefined : i + 1 + comment).join('');
        return [{ command: line, fields: [...shown.matchAll(/"(\w+)":/g)].map((match) => match[1]) }];
      });
      expect(queries.length).toBeGreaterThanOrEqual(5);
      for (const { command, fields } of queries) {
        expect([command, fields.length > 0]).toEqual([command, true]);
        const [answer] = await runShell(`${setup}\nCID=\n${command}`, demo.apiUrl, cid);
        const keys = keysOf(JSON.parse(answer));
        expect([command, fields.filter((field) => !keys.has(field))]).toEqual([command, []]);
      }
    });
  });

  it('runs the minimal backend of "Writing a backend" behind a gateway: hello, echo, a topic join and a publish', async () => {
    const start = blockWith(codeBlocks(section(README, '## Writing a backend')), 'minimal-backend.js');
    expect(start).toMatch(/^node examples\/minimal-backend\.js &/m);
    expect(start).toContain('UPSTREAM_URL=http://127.0.0.1:9000');
    const port = await freePort();
    const t = await startTestGateway({ UPSTREAM_URL: `http://127.0.0.1:${port}` });
    const backend = spawn(process.execPath, [path.join(PROJECT_ROOT, 'examples/minimal-backend.js')], {
      env: { PATH: process.env.PATH ?? '', PORT: String(port), GATEWAY_API: t.apiUrl },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      await within(
        new Promise((resolve) =>
          backend.stdout!.on('data', (chunk: Buffer) => /minimal backend on/.test(String(chunk)) && resolve(null)),
        ),
        'the minimal backend to listen',
        5000,
      );
      const client = await WsClient.connect(t.wsUrl, { query: 'user=alice' });
      expect(await client.next(5000)).toEqual(['hello', {}, { user_id: 'alice' }]);
      expect(await client.call('echo', { request_id: 1 }, ['hi'])).toEqual([
        'result',
        { request_id: 1 },
        { args: ['hi'], kwargs: {} },
      ]);
      expect(await client.call('topic.join', { request_id: 2 }, ['news'])).toEqual([
        'result',
        { request_id: 2 },
        { joined: 'news' },
      ]);
      const published = await fetch(`${t.apiUrl}/v1/publish/news`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: '{"text":"hi"}',
      });
      expect(published.status).toBe(204);
      expect(await client.next(5000)).toEqual(['message', { topic: 'news' }, { text: 'hi' }]);
      // A user id the gateway would refuse is refused by the backend itself, with a reason.
      const refused = await WsClient.connect(t.wsUrl, { query: 'user=alice@example.com' });
      expect((await refused.next(5000)).slice(0, 2)).toEqual([
        'fatal_error',
        { error_kind: 'http_error', http_error: 401 },
      ]);
      await Promise.all([client.close(), refused.close()]);
    } finally {
      backend.kill('SIGTERM');
      await t.close();
    }
  });
});

describe('docs/operations.md', () => {
  it('runs "Running several nodes" as written: its own Redis and backend on free ports, two nodes that meet', async () => {
    const text = section(
      readFileSync(path.join(PROJECT_ROOT, 'docs/operations.md'), 'utf8'),
      '## Running several nodes',
    );
    const block = blockWith(codeBlocks(text), 'free_port');
    const publish = /`(curl [^`]+\$API2[^`]+)`/.exec(text);
    if (publish === null) throw new Error('no curl command publishing through $API2');
    // dist/ is built by the e2e globalSetup: a rebuild here would rewrite it under the other specs.
    const script = block.replace(/^npm run build\n/m, '') + '\nwait\n';
    const shell = spawn('bash', ['-c', script], {
      cwd: PROJECT_ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true, // its own process group: Redis, the backend and both nodes stop together
    });
    let output = '';
    shell.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    shell.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    const exited = new Promise((resolve) => shell.once('exit', resolve));
    try {
      const ports = await waitFor(
        () =>
          /node 1: ws:\/\/127\.0\.0\.1:(\d+)\/ and http:\/\/127\.0\.0\.1:(\d+), node 2: .* and http:\/\/127\.0\.0\.1:(\d+)/.exec(
            output,
          ) ?? undefined,
        `the block to print its ports (output: ${output.slice(-500)})`,
        5000,
      );
      const [ws1, api2] = [ports[1], ports[3]];
      await waitFor(
        () => ((output.match(/"msg":"gateway started"/g) ?? []).length === 2 ? true : undefined),
        'both nodes to log "gateway started"',
        20_000,
      ).catch((err: Error) => {
        throw new Error(`${err.message}; output: ${output.slice(-1500)}`);
      });
      const client = await WsClient.connect(`ws://127.0.0.1:${ws1}`, { query: 'user=alice' });
      expect(await client.next(5000)).toEqual(['hello', {}, { user_id: 'alice' }]);
      expect(await client.call('topic.join', { request_id: 1 }, ['news'])).toEqual([
        'result',
        { request_id: 1 },
        { joined: 'news' },
      ]);
      const { stdout } = await run('bash', ['-c', publish[1]], { env: { PATH: process.env.PATH ?? '', API2: api2 } });
      expect(stdout).toBe('204\n');
      expect(await client.next(5000)).toEqual(['message', { topic: 'news' }, { text: 'hi' }]);
      await client.close();
    } finally {
      process.kill(-shell.pid!, 'SIGTERM');
      await within(exited, `the several-nodes block to stop (output: ${output.slice(-500)})`, 15_000);
    }
  }, 40_000);
});

describe('docs/configuration.md', () => {
  it('documents every environment setting the loader reads (src/config/env.dto.ts)', () => {
    const dto = readFileSync(path.join(PROJECT_ROOT, 'src/config/env.dto.ts'), 'utf8');
    const settings = [...dto.matchAll(/@Expose\(\)[^\n]*?\b([A-Z][A-Z0-9_]+)[?!]?:/g)].map((m) => m[1]);
    expect(settings.length).toBeGreaterThan(40);
    const doc = readFileSync(path.join(PROJECT_ROOT, 'docs/configuration.md'), 'utf8');
    const tableRows = doc.split('\n').filter((line) => line.startsWith('| `'));
    expect(settings.filter((name) => !tableRows.some((row) => row.includes(`\`${name}\``)))).toEqual([]);
  });
});
