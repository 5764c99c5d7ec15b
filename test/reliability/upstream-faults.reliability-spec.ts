import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Frame, LoadClient, SEED, pool, rng } from './lib/clients';
import { GatewayProcess } from './lib/gateway';
import { sized } from './lib/profile';
import { Checks, record } from './lib/report';
import { LoadUpstream, closedPortUrl, junkServer } from './lib/upstream';

const CLIENTS = sized({ short: 20, full: 100 });
const DURATION_MS = sized({ short: 8_000, full: 60_000 });
const SLOW_SOCKETS = 2;
const SLOW_QUEUE = 4;

const http500 = (frame: Frame): boolean =>
  frame[0] === 'error' && frame[1].error_kind === 'http_error' && frame[1].http_error === 500 && frame[2] === null;

/** Method → [upstream fault, the SPEC §4.3 frame it must produce]. */
const KINDS: Record<string, { method: string; kwargs?: Record<string, unknown>; ok: (f: Frame) => boolean }> = {
  ok: { method: 'echo', ok: (f) => f[0] === 'result' },
  hang: { method: 'hang', ok: http500 },
  reset: { method: 'reset', ok: http500 },
  garbage: {
    method: 'garbage',
    ok: (f) => f[0] === 'error' && f[1].error_kind === 'data_error' && typeof f[2] === 'string',
  },
  status503: {
    method: 'status.503',
    ok: (f) => f[0] === 'error' && f[1].http_error === 503 && JSON.stringify(f[2]) === '{"error":"scripted"}',
  },
  down: { method: 'down.x', ok: http500 },
  junk: { method: 'junk.x', ok: http500 },
  slow: {
    method: 'slow.x',
    kwargs: { delay_ms: 300 },
    ok: (f) =>
      f[0] === 'result' || (f[0] === 'error' && f[1].error_kind === 'internal_error' && f[2] === 'too_many_requests'),
  },
};

describe('upstream faults during load (issue 11)', () => {
  let gateway: GatewayProcess;
  let upstream: LoadUpstream;
  let junk: Awaited<ReturnType<typeof junkServer>>;
  afterAll(async () => {
    await gateway?.stop();
    await upstream?.close();
    await junk?.close();
  });

  it('answers every call with its SPEC §4.3 frame (hang, reset, garbage, status, down, junk, slow with a small queue) and drops no connection', async () => {
    const checks = new Checks();
    const r = rng(SEED);
    upstream = await LoadUpstream.start();
    junk = await junkServer();
    const file = path.join(os.tmpdir(), `reliability-routes-${process.pid}.yaml`);
    fs.writeFileSync(
      file,
      `destinations:
  main: { url: "${upstream.url}", timeout: 1s }
  down: { url: "${await closedPortUrl()}", timeout: 1s }
  junk: { url: "${junk.url}", timeout: 1s }
  slow: { url: "${upstream.url}", timeout: 5s, max_sockets: ${SLOW_SOCKETS}, queue_limit: ${SLOW_QUEUE} }
handlers:
  main:
    path: /
    message_handlers: { "*": main/, "gateway.*": main/, "down.*": down/, "junk.*": junk/, "slow.*": slow/ }
`,
    );
    gateway = await GatewayProcess.start({ GATEWAY_CONFIG: file, PING_INTERVAL: '60s' });
    const clients: LoadClient[] = [];
    await pool(CLIENTS, 16, async (i) => void clients.push(await LoadClient.open(gateway.wsUrl, `user=load${i}`)));

    const outcomes = new Map<string, number>();
    const wrong: string[] = [];
    const until = Date.now() + DURATION_MS;
    const note = (kind: string, frame: Frame): void => {
      const key = `${kind} → ${frame[0]}${frame[1].error_kind ? ':' + String(frame[1].error_kind) : ''}${frame[1].http_error ? ':' + String(frame[1].http_error) : ''}${typeof frame[2] === 'string' && frame[0] === 'error' && kind === 'slow' ? ':' + frame[2] : ''}`;
      outcomes.set(key, (outcomes.get(key) ?? 0) + 1);
      if (!KINDS[kind].ok(frame)) wrong.push(`${kind}: ${JSON.stringify(frame).slice(0, 200)}`);
    };
    await Promise.all(
      clients.map(async (client) => {
        while (Date.now() < until && client.isOpen) {
          const kind = r.pick(Object.keys(KINDS));
          const { method, kwargs } = KINDS[kind];
          // Slow calls go in bursts, past the destination's sockets and queue.
          const burst = kind === 'slow' ? 4 + r.int(8) : 1 + r.int(3);
          const replies = await Promise.all(
            Array.from({ length: burst }, () =>
              client.call(method, [kind], kwargs, 10_000).catch((err: Error) => ['timeout', {}, err.message] as Frame),
            ),
          );
          for (const frame of replies) note(kind, frame);
        }
      }),
    );
    const gauges = await gateway.gauges();
    const closed = clients.filter((c) => !c.isOpen).map((c) => c.closeInfo);
    checks.check('every call got its SPEC §4.3 frame', wrong.length === 0, wrong.slice(0, 8));
    checks.check(
      'every kind of fault was exercised',
      Object.keys(KINDS).every((k) => [...outcomes.keys()].some((o) => o.startsWith(k + ' '))),
      [...outcomes.keys()],
    );
    checks.check(
      'the small queue refused some slow calls with too_many_requests',
      (outcomes.get('slow → error:internal_error:too_many_requests') ?? 0) > 0,
      Object.fromEntries(outcomes),
    );
    checks.check('no connection dropped', closed.length === 0 && gauges.gateway_connections === CLIENTS, {
      closed,
      gauges,
    });
    checks.check('no error-level log line', gateway.errorLines.length === 0, gateway.errorLines.slice(0, 3));
    record('upstream-faults', {
      seed: SEED,
      clients: CLIENTS,
      duration_s: DURATION_MS / 1000,
      calls: [...outcomes.values()].reduce((a, b) => a + b, 0),
      outcomes: Object.fromEntries([...outcomes].sort()),
      upstream_requests: Object.fromEntries(upstream.counts),
      checks: checks.summary,
    });
    await Promise.all(clients.map((c) => c.close()));
    fs.rmSync(file, { force: true });
    checks.assertAll();
  });
});
