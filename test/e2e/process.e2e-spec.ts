import { ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import * as net from 'node:net';
import { networkInterfaces } from 'node:os';
import * as path from 'node:path';
import { ChildExit, ChildGateway, PROJECT_ROOT, buildGateway } from './harness/child-gateway';
import { FakeUpstream } from './harness/fake-upstream';
import { freePort } from './harness/ports';
import { within } from './harness/wait';
import { WsClient } from './harness/ws-client';

const MAIN_JS = path.join(PROJECT_ROOT, 'dist', 'main.js');
const AUTH_PATH = '/gateway/authorize_connection';
/** Generous for a loaded 2-CPU machine, still far below anything that would hide a hang. */
const START_MS = 15_000;
const EXIT_MS = 5_000;

type AuthBody = [{ connection_id: string }, unknown[], Record<string, unknown>];

/**
 * `node dist/main.js` spawned with exactly `env` (nothing inherited but what the
 * caller passes), keeping raw stdout lines: ChildGateway parses JSON and needs
 * the "gateway started" line, which LOG_LEVEL=error and LOG_FORMAT=pretty change.
 */
class RawChild {
  readonly lines: string[] = [];
  stderr = '';
  private pending = '';
  private exitInfo: ChildExit | null = null;
  private readonly exited: Promise<ChildExit>;

  private constructor(readonly child: ChildProcess) {
    child.stdout!.on('data', (chunk: Buffer) => {
      this.pending += chunk.toString('utf8');
      const parts = this.pending.split('\n');
      this.pending = parts.pop()!;
      for (const line of parts) if (line.trim() !== '') this.lines.push(line);
    });
    child.stderr!.on('data', (chunk: Buffer) => (this.stderr += chunk.toString('utf8')));
    // 'close' (not 'exit'): stdio is drained, so `lines` and `stderr` are complete.
    this.exited = new Promise((resolve) =>
      child.once('close', (code, signal) => {
        if (this.pending.trim() !== '') this.lines.push(this.pending);
        this.pending = '';
        this.exitInfo = { code, signal };
        resolve(this.exitInfo);
      }),
    );
  }

  static spawn(env: Record<string, string>): RawChild {
    return new RawChild(
      spawn(process.execPath, [MAIN_JS], { cwd: PROJECT_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] }),
    );
  }

  get hasExited(): boolean {
    return this.exitInfo !== null;
  }

  kill(signal: NodeJS.Signals): void {
    if (this.exitInfo === null) this.child.kill(signal);
  }

  exit(ms = EXIT_MS): Promise<ChildExit> {
    return within(
      this.exited,
      `dist/main.js to exit (stdout: ${this.lines.join('\n').slice(0, 500)}; stderr: ${this.stderr.slice(0, 500)})`,
      ms,
    );
  }

  async stop(): Promise<void> {
    if (this.exitInfo !== null) return;
    this.child.kill('SIGKILL');
    await this.exit();
  }
}

/**
 * Resolve once `GET url` answers 200, re-trying refused connections (the child
 * is still starting) within `ms`; fail at once with its stderr if the child exits.
 */
async function untilServing(child: RawChild, url: string, ms = START_MS): Promise<void> {
  const deadline = Date.now() + ms;
  let last = 'no answer yet';
  for (;;) {
    if (child.hasExited)
      throw new Error(`dist/main.js exited before ${url} answered 200; stderr: ${child.stderr.slice(0, 500)}`);
    try {
      const res = await fetch(url);
      await res.text();
      if (res.status === 200) return;
      last = `status ${res.status}`;
    } catch (err) {
      last = (err as Error & { cause?: Error }).cause?.message ?? (err as Error).message;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out after ${ms} ms waiting for GET ${url} to answer 200 (last: ${last})`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Listening TCP sockets on `port` from /proc/net/tcp{,6}, as "tcp 0100007F" / "tcp6 0000…". */
function listeningSockets(port: number): string[] {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  const found: string[] = [];
  for (const table of ['tcp', 'tcp6']) {
    const rows = readFileSync(`/proc/net/${table}`, 'utf8').split('\n').slice(1);
    for (const row of rows) {
      const [, local, , state] = row.trim().split(/\s+/);
      if (local === undefined || state !== '0A') continue; // 0A = LISTEN
      const [address, localPort] = local.split(':');
      if (localPort === hexPort) found.push(`${table} ${address}`);
    }
  }
  return found;
}

/** Opens a plain TCP connection to host:port; resolves 'connected' or the error code. */
function tryConnect(host: string, port: number, ms = 3000): Promise<string> {
  return within(
    new Promise<string>((resolve) => {
      const socket = net.connect({ host, port });
      socket.once('connect', () => {
        socket.destroy();
        resolve('connected');
      });
      socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    }),
    `a TCP connect to ${host}:${port} to succeed or fail`,
    ms,
  );
}

const externalIPv4 = Object.values(networkInterfaces())
  .flat()
  .find((info) => info !== undefined && info.family === 'IPv4' && !info.internal)?.address;

/** SPEC §1 (configuration, listeners) and §10 (shutdown, logs) on `node dist/main.js`, as production runs it. */
describe('the gateway process (SPEC §1, §10)', () => {
  let upstream: FakeUpstream;
  let gateway: ChildGateway | undefined;
  const raws: RawChild[] = [];
  const clients: WsClient[] = [];

  // The child runs dist/, so build the current sources first.
  beforeAll(() => buildGateway(120_000), 120_000);

  beforeEach(async () => {
    upstream = await FakeUpstream.start();
  });

  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
    await gateway?.stop();
    gateway = undefined;
    await Promise.all(raws.splice(0).map((r) => r.stop()));
    await upstream.close();
  });

  function spawnRaw(env: Record<string, string>): RawChild {
    const raw = RawChild.spawn({ PATH: process.env.PATH ?? '', ...env });
    raws.push(raw);
    return raw;
  }

  /** Spawn on two ports picked beforehand (for log settings where the ports cannot be read from the log) and await both listeners. */
  async function startOnFreePorts(env: Record<string, string>): Promise<{ raw: RawChild; wsUrl: string }> {
    const [publicPort, internalPort] = [await freePort(), await freePort()];
    const raw = spawnRaw({
      UPSTREAM_URL: upstream.url,
      HOST: '127.0.0.1',
      PORT: String(publicPort),
      BACKEND_API_HOST: '127.0.0.1',
      BACKEND_API_PORT: String(internalPort),
      ...env,
    });
    await untilServing(raw, `http://127.0.0.1:${internalPort}/health/ready`);
    await untilServing(raw, `http://127.0.0.1:${publicPort}/health/ready`);
    return { raw, wsUrl: `ws://127.0.0.1:${publicPort}` };
  }

  /** Connect, get hello, close from the client side and await the close handshake. */
  async function helloAndClose(wsUrl: string): Promise<void> {
    const { client } = await WsClient.hello(wsUrl);
    await upstream.requestTo(AUTH_PATH);
    await client.close();
  }

  describe('SHUTDOWN_GRACE (SPEC §1, §10)', () => {
    it('closes a client whose call still hangs with 1001 once SHUTDOWN_GRACE (1s) has passed, then exits 0', async () => {
      upstream.on('POST /slow', 'hang');
      const g = (gateway = await ChildGateway.start(
        { UPSTREAM_URL: upstream.url, SHUTDOWN_GRACE: '1s', UPSTREAM_TIMEOUT: '30s', LOG_LEVEL: 'info' },
        START_MS,
      ));
      const { client } = await WsClient.hello(g.wsUrl);
      clients.push(client);
      client.send(['slow', { request_id: 1 }, [], {}]);
      await upstream.requestTo('/slow');

      const signalledAt = Date.now();
      g.kill('SIGTERM');
      expect(await client.closed(EXIT_MS)).toEqual({ code: 1001, reason: 'shutdown' });
      const closedAfterMs = Date.now() - signalledAt;
      // Not before the grace (the call was still in flight), and well before its 30 s upstream timeout.
      expect(closedAfterMs).toBeGreaterThanOrEqual(800);
      expect(closedAfterMs).toBeLessThan(4000);
      expect(client.frames.filter((f) => f[0] === 'result')).toEqual([]);
      expect(await g.exit(EXIT_MS)).toEqual({ code: 0, signal: null });
      expect(g.logs).toContainEqual(expect.objectContaining({ msg: 'shutdown requested', signal: 'SIGTERM' }));
    }, 40_000);
  });

  describe('NODE_ID (SPEC §1)', () => {
    it('prefixes the connection id sent in the authorization request with NODE_ID and a dash', async () => {
      const g = (gateway = await ChildGateway.start(
        { UPSTREAM_URL: upstream.url, NODE_ID: 'node_abc', LOG_LEVEL: 'info' },
        START_MS,
      ));
      expect(g.logs).toContainEqual(expect.objectContaining({ msg: 'gateway started', node_id: 'node_abc' }));
      const { client } = await WsClient.hello(g.wsUrl);
      clients.push(client);
      const auth = await upstream.requestTo(AUTH_PATH);
      const connectionId = (auth.body as AuthBody)[0].connection_id;
      expect(connectionId).toMatch(/^node_abc-[A-Za-z0-9_-]+$/);
    }, 40_000);
  });

  describe('invalid configuration (SPEC §1)', () => {
    it('stops start-up with a non-zero exit and one line per problem naming each bad key', async () => {
      const raw = spawnRaw({
        MAX_FRAME_BYTES: '1.5MiB',
        PING_INTERVAL: '10',
        HOST: '127.0.0.1',
        PORT: '0',
        BACKEND_API_HOST: '127.0.0.1',
        BACKEND_API_PORT: '0',
      });
      const exit = await raw.exit(START_MS);
      expect(exit.signal).toBeNull();
      expect(exit.code).toBeGreaterThan(0);
      const [header, ...problems] = raw.stderr.trimEnd().split('\n');
      expect(header).toBe('invalid configuration:');
      expect([...problems].sort()).toEqual(
        [
          'MAX_FRAME_BYTES: "1.5MiB" is not a byte size (examples: "1048576", "512KiB", "10MiB")',
          'PING_INTERVAL: "10" is not a duration (examples: "30s", "2m")',
          'UPSTREAM_URL: is required (or give GATEWAY_CONFIG with destinations)',
        ].sort(),
      );
      expect(raw.lines).toEqual([]); // never got as far as "gateway started"
    }, 40_000);
  });

  describe('LOG_LEVEL and LOG_FORMAT (SPEC §1)', () => {
    it.each([
      ['error', false],
      ['info', true], // control: the same session does write info lines
    ])(
      'with LOG_LEVEL=%s a connect, hello and close writes info lines: %s',
      async (level, writesInfo) => {
        const { raw, wsUrl } = await startOnFreePorts({ LOG_LEVEL: level as string });
        await helloAndClose(wsUrl);
        raw.kill('SIGTERM');
        expect(await raw.exit()).toEqual({ code: 0, signal: null });
        const entries = raw.lines.map((line) => {
          try {
            return JSON.parse(line) as Record<string, unknown>;
          } catch {
            throw new Error(`log line is not JSON: ${line}`);
          }
        });
        if (writesInfo) {
          expect(entries).toContainEqual(expect.objectContaining({ level: 'info', msg: 'connection opened' }));
        } else {
          expect(entries.filter((e) => e.level !== 'error')).toEqual([]);
        }
      },
      40_000,
    );

    it('with LOG_FORMAT=pretty writes no JSON lines, the usual messages included', async () => {
      const { raw, wsUrl } = await startOnFreePorts({ LOG_LEVEL: 'info', LOG_FORMAT: 'pretty' });
      await helloAndClose(wsUrl);
      raw.kill('SIGTERM');
      expect(await raw.exit()).toEqual({ code: 0, signal: null });
      const jsonLines = raw.lines.filter((line) => {
        try {
          JSON.parse(line);
          return true;
        } catch {
          return false;
        }
      });
      expect(jsonLines).toEqual([]);
      expect(raw.lines).toContainEqual(expect.stringContaining('gateway started'));
      expect(raw.lines).toContainEqual(expect.stringContaining('connection opened'));
    }, 40_000);
  });

  describe('internal listener host (SPEC §1: BACKEND_API_HOST defaults to 127.0.0.1)', () => {
    /** Spawn with neither HOST nor BACKEND_API_HOST in the environment; ports come from the JSON started line. */
    async function startWithDefaultHosts(): Promise<{ raw: RawChild; publicPort: number; internalPort: number }> {
      const raw = spawnRaw({ UPSTREAM_URL: upstream.url, PORT: '0', BACKEND_API_PORT: '0', LOG_LEVEL: 'info' });
      const started = await within(
        new Promise<Record<string, unknown>>((resolve, reject) => {
          const check = (): void => {
            for (const line of raw.lines) {
              try {
                const entry = JSON.parse(line) as Record<string, unknown>;
                if (entry.msg === 'gateway started') return resolve(entry);
              } catch {
                // not a JSON line: keep looking
              }
            }
            if (raw.hasExited)
              return reject(new Error(`dist/main.js exited before starting: ${raw.stderr.slice(0, 500)}`));
          };
          raw.child.stdout!.on('data', () => setImmediate(check));
          raw.child.once('close', () => setImmediate(check));
          check();
        }),
        'the "gateway started" log line of dist/main.js',
        START_MS,
      );
      return { raw, publicPort: Number(started.public_port), internalPort: Number(started.internal_port) };
    }

    it('binds the internal listener to 127.0.0.1 only (and the public one to 0.0.0.0, as a control)', async () => {
      const { internalPort, publicPort } = await startWithDefaultHosts();
      expect((await fetch(`http://127.0.0.1:${internalPort}/health/live`)).status).toBe(200);
      const metrics = await fetch(`http://127.0.0.1:${internalPort}/metrics`);
      expect(metrics.status).toBe(200);
      expect(await metrics.text()).toContain('gateway_connections');
      // The started log line carries ports only, so the bound address is read from the kernel's socket table.
      expect(listeningSockets(internalPort)).toEqual(['tcp 0100007F']);
      expect(listeningSockets(publicPort)).toEqual(['tcp 00000000']);
    }, 40_000);

    (externalIPv4 ? it : it.skip)(
      `refuses the internal port on a non-loopback address (${externalIPv4 ?? 'none here'}) while the public port answers there`,
      async () => {
        const { internalPort, publicPort } = await startWithDefaultHosts();
        expect(await tryConnect(externalIPv4!, publicPort)).toBe('connected');
        expect(await tryConnect(externalIPv4!, internalPort)).toBe('ECONNREFUSED');
        expect(await tryConnect('127.0.0.1', internalPort)).toBe('connected');
      },
      40_000,
    );
  });
});
