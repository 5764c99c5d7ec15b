import { ChildProcess, spawn } from 'node:child_process';
import * as net from 'node:net';
import * as path from 'node:path';
import { PROJECT_ROOT } from './harness/child-gateway';
import { freePort } from './harness/ports';
import { within } from './harness/wait';

const DEMO_JS = path.join(PROJECT_ROOT, 'examples', 'demo.js');

/** Resolves once something accepts TCP connections on `port` (a browser opened right away, a health probe). */
async function untilListening(port: number, demo: ChildProcess, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (demo.exitCode !== null || demo.signalCode !== null)
      throw new Error(`the demo exited (${demo.exitCode ?? demo.signalCode}) before its page port listened`);
    const isUp = await new Promise<boolean>((resolve) => {
      const socket = net
        .connect(port, '127.0.0.1', () => socket.end(() => resolve(true)))
        .once('error', () => resolve(false));
    });
    if (isUp) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for the demo page port ${port}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/**
 * Issue 17 item 2: `npm run demo` serves its page from the moment its port
 * listens. Before a gateway has started there is no gateway port to put in
 * the page: 503 with Retry-After, and no request may crash the demo.
 */
describe('demo start-up', () => {
  let demo: ChildProcess;
  let output = '';
  const started = () => /gateway started/.test(output);

  afterEach(async () => {
    if (demo.exitCode !== null || demo.signalCode !== null) return;
    const exited = new Promise((resolve) => demo.once('exit', resolve));
    demo.kill('SIGINT');
    await within(exited, 'the demo to stop on SIGINT', 10_000);
  });

  it('answers a page request made before the gateway started with 503 Retry-After, then serves the page', async () => {
    const backendPort = await freePort();
    demo = spawn(process.execPath, [DEMO_JS], {
      cwd: PROJECT_ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        PORT: '0',
        BACKEND_API_PORT: '0',
        DEMO_BACKEND_PORT: String(backendPort),
        LOG_FORMAT: 'json',
        LOG_LEVEL: 'info',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    demo.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    demo.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    const exit = new Promise<string>((resolve) =>
      demo.once('exit', (code, signal) => resolve(`the demo exited (${code ?? signal}): ${output.slice(-2000)}`)),
    );

    await untilListening(backendPort, demo, 15_000);
    const pageUrl = `http://127.0.0.1:${backendPort}/`;
    // Several at once, as a browser and a probe would: none may bring the demo down.
    const early = await Promise.all(
      [pageUrl, pageUrl, `${pageUrl}?node=2`, `${pageUrl}?node=x`, `${pageUrl}app.js`].map((url) => fetch(url)),
    ).catch((err: Error) => {
      throw new Error(`${err.message} (${String(err.cause)}); demo output: ${output.slice(-2000)}`);
    });
    expect(started()).toBe(false); // these were answered before any gateway started
    for (const res of early.slice(0, 4)) {
      expect([res.status, res.headers.get('retry-after')]).toEqual([503, '1']);
      expect(await res.text()).toMatch(/starting/);
    }
    // The script names no port: it is served at once.
    expect(early[4].status).toBe(200);
    await early[4].text();

    // Retry as told until the gateway is up: then the page names its port.
    let html = '';
    const deadline = Date.now() + 30_000;
    for (;;) {
      const res = await Promise.race([fetch(pageUrl), exit.then((why) => Promise.reject(new Error(why)))]);
      if (res.status === 200) {
        html = await res.text();
        break;
      }
      expect([res.status, res.headers.get('retry-after')]).toEqual([503, '1']);
      await res.text();
      if (Date.now() > deadline) throw new Error('timed out after 30000 ms waiting for the demo page to be served');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(started()).toBe(true);
    const port = /"public_port":(\d+)/.exec(output)?.[1];
    expect(html).toContain(`<meta name="gateway-port" content="${port}">`);
    expect(demo.exitCode).toBeNull();
  }, 60_000);
});
