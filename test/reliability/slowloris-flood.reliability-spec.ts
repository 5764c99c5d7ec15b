import * as net from 'node:net';
import { within } from '../e2e/harness/wait';
import { LoadClient, api, pool } from './lib/clients';
import { GatewayProcess } from './lib/gateway';
import { sized } from './lib/profile';
import { Checks, percentile, record } from './lib/report';
import { LoadUpstream } from './lib/upstream';

const HEADERS_TIMEOUT_MS = 2000;
const SLOW_PER_LISTENER = sized({ short: 150, full: 1500 });
const IDLE_PER_LISTENER = sized({ short: 150, full: 1500 });
const MAX_CONNECTIONS = sized({ short: 200, full: 2000 });
const FLOOD_EXTRA = sized({ short: 100, full: 1000 });
/** A slow socket must be cut by the headers timeout plus Node's check interval, with room for a loaded machine. */
const CUT_WITHIN_MS = HEADERS_TIMEOUT_MS + 3000;

interface SlowSocket {
  readonly connected: Promise<void>;
  readonly closedAfterMs: Promise<number>;
  readonly answer: () => string;
}

/** A socket that sends `head` and then one more header line every 300 ms (slowloris), or nothing at all (`head` empty). */
function slowSocket(port: number, head: string): SlowSocket {
  const started = Date.now();
  const socket = net.connect(port, '127.0.0.1');
  let received = '';
  socket.on('error', () => undefined);
  socket.on('data', (c: Buffer) => (received += c.toString('latin1')));
  let dribble: NodeJS.Timeout | undefined;
  const connected = new Promise<void>((resolve) =>
    socket.once('connect', () => resolve()).once('error', () => resolve()),
  );
  socket.on('connect', () => {
    if (head === '') return;
    socket.write(head);
    dribble = setInterval(() => socket.write(`X-Slow-${Date.now()}: x\r\n`), 300);
  });
  const closedAfterMs = new Promise<number>((resolve) =>
    socket.once('close', () => {
      clearInterval(dribble);
      resolve(Date.now() - started);
    }),
  );
  return { connected, closedAfterMs, answer: () => received.split('\r\n')[0] };
}

describe('slowloris, idle sockets and a connection flood (issue 11)', () => {
  let gateway: GatewayProcess;
  let upstream: LoadUpstream;
  afterAll(async () => {
    await gateway?.stop();
    await upstream?.close();
  });

  it('cuts slow and idle sockets on both listeners with 408 while serving others, and holds MAX_CONNECTIONS under a flood', async () => {
    const checks = new Checks();
    upstream = await LoadUpstream.start();
    gateway = await GatewayProcess.start({
      UPSTREAM_URL: upstream.url,
      HTTP_HEADERS_TIMEOUT: `${HEADERS_TIMEOUT_MS}ms`,
      HTTP_REQUEST_TIMEOUT: '4s',
      MAX_CONNECTIONS: String(MAX_CONNECTIONS),
      PING_INTERVAL: '60s',
    });

    const slow: SlowSocket[] = [];
    for (const port of [gateway.publicPort, gateway.internalPort]) {
      for (let i = 0; i < SLOW_PER_LISTENER + IDLE_PER_LISTENER; i++) {
        const head =
          i >= SLOW_PER_LISTENER
            ? ''
            : port === gateway.publicPort && i % 2 === 0
              ? 'GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n'
              : 'GET /health/live HTTP/1.1\r\nHost: x\r\n';
        slow.push(slowSocket(port, head));
        // In batches: thousands of simultaneous SYNs overflow the kernel's accept queue (backlog 511),
        // leaving client sockets the kernel calls established but the gateway never accepted.
        if (slow.length % 200 === 0) await Promise.all(slow.slice(-200).map((s) => s.connected));
      }
    }

    // Legitimate traffic on both listeners while the slow sockets are held.
    const latencies: number[] = [];
    const failures: string[] = [];
    const timed = async (what: string, task: () => Promise<boolean>): Promise<void> => {
      const started = Date.now();
      try {
        if (!(await task())) failures.push(what);
      } catch (err) {
        failures.push(`${what}: ${(err as Error).message}`);
      }
      latencies.push(Date.now() - started);
    };
    const legitUntil = Date.now() + HEADERS_TIMEOUT_MS + 1000;
    let rounds = 0;
    while (Date.now() < legitUntil) {
      rounds++;
      await Promise.all([
        timed(
          'public health',
          async () => (await fetch(`http://127.0.0.1:${gateway.publicPort}/health/live`)).status === 200,
        ),
        timed('internal health', async () => (await api(gateway.apiUrl, 'GET', '/health/ready')) === 200),
        timed('publish', async () => (await api(gateway.apiUrl, 'POST', '/v1/publish/legit', { n: rounds })) === 204),
        timed('ws call', async () => {
          const client = await LoadClient.open(gateway.wsUrl, `user=legit${rounds}`);
          const reply = await client.call('echo', [rounds]);
          await client.close();
          return reply[0] === 'result';
        }),
      ]);
    }

    const closedAfter = await within(
      Promise.all(slow.map((s) => s.closedAfterMs)),
      'every slow or idle socket to be closed by the gateway',
      60_000,
    );
    const answers = new Map<string, number>();
    for (const s of slow) answers.set(s.answer() || '(nothing)', (answers.get(s.answer() || '(nothing)') ?? 0) + 1);
    const late = closedAfter.filter((ms) => ms > CUT_WITHIN_MS).length;
    checks.check('every legitimate request served', failures.length === 0, failures.slice(0, 5));
    checks.check(
      `every slow or idle socket cut within ${CUT_WITHIN_MS} ms`,
      late === 0,
      `${late} late, max ${Math.max(...closedAfter)} ms`,
    );
    checks.check(
      'slow sockets answered 408 (idle ones may just be closed)',
      [...answers.keys()].every((k) => k === 'HTTP/1.1 408 Request Timeout' || k === '(nothing)'),
      Object.fromEntries(answers),
    );

    // Flood: MAX_CONNECTIONS + extra WebSocket handshakes at once.
    const clients: LoadClient[] = [];
    const refused = new Map<string, number>();
    await pool(MAX_CONNECTIONS + FLOOD_EXTRA, 64, async (i) => {
      try {
        clients.push(await LoadClient.open(gateway.wsUrl, `user=flood${i % 100}`, { ms: 20_000 }));
      } catch (err) {
        const key = (err as Error).message;
        refused.set(key, (refused.get(key) ?? 0) + 1);
      }
    });
    const atPeak = (await gateway.gauges()).gateway_connections;
    checks.check(
      `exactly MAX_CONNECTIONS (${MAX_CONNECTIONS}) accepted`,
      clients.length === MAX_CONNECTIONS && atPeak === MAX_CONNECTIONS,
      { accepted: clients.length, gauge: atPeak },
    );
    checks.check(
      'the rest refused with 503',
      refused.get('handshake refused with 503') === FLOOD_EXTRA && refused.size === 1,
      Object.fromEntries(refused),
    );
    const probe = clients[0];
    checks.check(
      'accepted clients still served at the limit',
      (await probe.call('echo', ['at-limit']))[0] === 'result',
    );
    await Promise.all(clients.map((c) => c.close()));
    const after = await LoadClient.open(gateway.wsUrl, 'user=after');
    checks.check('a new client is accepted once the flood left', after.isOpen);
    await after.close();
    checks.check('no error-level log line', gateway.errorLines.length === 0, gateway.errorLines.slice(0, 3));

    record('slowloris-flood', {
      slow_sockets: SLOW_PER_LISTENER * 2,
      idle_sockets: IDLE_PER_LISTENER * 2,
      headers_timeout_ms: HEADERS_TIMEOUT_MS,
      slow_closed_after_ms: {
        p50: percentile(closedAfter, 50),
        p99: percentile(closedAfter, 99),
        max: Math.max(...closedAfter),
      },
      slow_answers: Object.fromEntries(answers),
      legit_requests: latencies.length,
      legit_latency_ms: { p50: percentile(latencies, 50), p99: percentile(latencies, 99), max: Math.max(...latencies) },
      flood: {
        attempted: MAX_CONNECTIONS + FLOOD_EXTRA,
        accepted: clients.length,
        refused: Object.fromEntries(refused),
        gauge_at_peak: atPeak,
      },
      checks: checks.summary,
    });
    checks.assertAll();
  });
});
