import * as os from 'node:os';
import { Frame, LoadClient, pool } from './lib/clients';
import { GatewayProcess, sampleRss } from './lib/gateway';
import { sized } from './lib/profile';
import { Checks, MiB, mib, percentile, record } from './lib/report';
import { LoadUpstream } from './lib/upstream';
import { waitFor, within } from '../e2e/harness/wait';

const OTHERS = sized({ short: 10, full: 50 });
const FLOOD_MS = sized({ short: 8_000, full: 60_000 });
/** The flooded method answers after this long: a slow backend, not a dead one. */
const SLOW_MS = 1000;
const CALLS_PER_VISIT = 3;
/** SPEC §1 defaults the scenario relies on. */
const MAX_PENDING_CALLS = 100;
const LOGIN_WITHIN_MS = 2000;
/**
 * Calls per second the flooder writes: far beyond what the slow method serves
 * (100 pending / 1 s = 100/s), so nearly all are refused, yet paced: a client
 * writing as fast as it can only measures how much CPU this shared machine
 * gives the gateway (per-IP rate limits belong to the proxy, docs/SECURITY.md).
 */
const FLOOD_PER_SECOND = sized({ short: 5_000, full: 20_000 });
const FLOOD_TICK_MS = 10;
const TOO_MANY = Buffer.from('"too_many_requests"');
const RESULT = Buffer.from('["result"');

/**
 * Issue 22: one authenticated client floods a slow method, 50 to 200 times
 * faster than it is served, while other users keep logging in and calling. The flood must be
 * refused beyond CLIENT_MAX_PENDING_CALLS at once, and the others must be
 * served as usual: logins first (the destination's first lane), calls in turn.
 */
describe('a flood of calls from one client (issue 22)', () => {
  let gateway: GatewayProcess;
  let upstream: LoadUpstream;
  afterAll(async () => {
    await gateway?.stop();
    await upstream?.close();
  });

  it('refuses the excess at once and keeps serving everybody else: every login and call served, logins within 2 s (median)', async () => {
    const checks = new Checks();
    upstream = await LoadUpstream.start();
    gateway = await GatewayProcess.start({ UPSTREAM_URL: upstream.url, PING_INTERVAL: '60s' });
    const rss = sampleRss(gateway);

    const flooder = await LoadClient.open(gateway.wsUrl, 'user=flooder');
    const flood = { sent: 0, refused: 0, results: 0, other: [] as string[] };
    let firstRefusal!: () => void;
    const saturated = new Promise<void>((resolve) => (firstRefusal = resolve));
    // The flooder's replies are only counted (no JSON.parse): this process must not be the bottleneck.
    flooder.socket.removeAllListeners('message');
    flooder.socket.on('message', (data: Buffer) => {
      if (data.includes(TOO_MANY)) {
        flood.refused++;
        firstRefusal();
      } else if (data.subarray(0, RESULT.length).equals(RESULT)) flood.results++;
      else if (flood.other.length < 5) flood.other.push(data.toString('utf8', 0, 200));
    });
    const floodUntil = Date.now() + FLOOD_MS;
    const kwargs = JSON.stringify({ delay_ms: SLOW_MS });
    const floodStarted = Date.now();
    const flooding = new Promise<void>((resolve) => {
      const timer = setInterval(() => {
        if (Date.now() >= floodUntil || !flooder.isOpen) {
          clearInterval(timer);
          return resolve();
        }
        // Catch up to the rate, unless the socket is backed up.
        const due = Math.floor(((Date.now() - floodStarted) * FLOOD_PER_SECOND) / 1000);
        while (flood.sent < due && flooder.socket.bufferedAmount < MiB)
          flooder.socket.send(`["flood",{"request_id":"f${flood.sent++}"},[],${kwargs}]`);
      }, FLOOD_TICK_MS);
    });
    await within(saturated, 'the first too_many_requests of the flood', 10_000);
    const loginMs: number[] = [];
    const callMs: number[] = [];
    const failures: string[] = [];
    let visits = 0;
    await pool(OTHERS, OTHERS, async (worker) => {
      while (Date.now() < floodUntil) {
        const visit = visits++;
        const started = performance.now();
        let client: LoadClient;
        try {
          client = await LoadClient.open(gateway.wsUrl, `user=other${worker}&visit=${visit}`, { ms: 10_000 });
        } catch (err) {
          failures.push(`login ${visit}: ${(err as Error).message}`);
          continue;
        }
        loginMs.push(performance.now() - started);
        for (let i = 0; i < CALLS_PER_VISIT; i++) {
          const callStarted = performance.now();
          const frame = await client
            .call('echo', [visit, i], {}, 15_000)
            .catch((err: Error) => ['timeout', {}, err.message] as Frame);
          if (frame[0] === 'result') callMs.push(performance.now() - callStarted);
          else failures.push(`call ${visit}.${i}: ${JSON.stringify(frame).slice(0, 200)}`);
        }
        await client.close();
      }
    });
    await flooding;
    const memory = rss.stop();
    // The flood's last held calls are answered within SLOW_MS; the flooder stays connected.
    await waitFor(
      () => (flood.results + flood.refused >= flood.sent ? true : undefined),
      `every flood frame answered (sent ${flood.sent}, answered ${flood.results + flood.refused})`,
      30_000,
    ).catch((err: Error) => failures.push(err.message));

    const gauges = await gateway.gauges();
    const maxLoginMs = Math.max(...loginMs);
    checks.check(
      'the flood was refused beyond CLIENT_MAX_PENDING_CALLS',
      flood.refused > 0 && flood.refused + flood.results === flood.sent,
      flood,
    );
    checks.check(
      'the flood never had more than 100 calls at the upstream per slow round',
      flood.results <= Math.ceil(FLOOD_MS / SLOW_MS + 2) * MAX_PENDING_CALLS,
      flood,
    );
    checks.check('the flood got nothing but results and too_many_requests', flood.other.length === 0, flood.other);
    checks.check('every other login and call was served', failures.length === 0, failures.slice(0, 8));
    // The median, not the maximum: on a shared 2-core machine a few logins wait for CPU, not for the flood
    // (test/e2e/call-flood checks one login within 2 s exactly; here p99 and max are reported with the load).
    const medianLoginMs = percentile(loginMs, 50);
    checks.check(
      `the others' logins got hello within ${LOGIN_WITHIN_MS} ms (median)`,
      loginMs.length > 0 && medianLoginMs < LOGIN_WITHIN_MS,
      {
        p50_ms: Math.round(medianLoginMs),
        max_ms: Math.round(maxLoginMs),
        logins: loginMs.length,
      },
    );
    checks.check('the others made calls during the flood', callMs.length >= OTHERS * CALLS_PER_VISIT, callMs.length);
    checks.check('the flooder stayed connected', flooder.isOpen && gauges.gateway_connections === 1, {
      open: flooder.isOpen,
      gauges,
    });
    checks.check('RSS stayed bounded (peak under start + 128 MiB)', memory.peakBytes - memory.startBytes < 128 * MiB, {
      start_mib: mib(memory.startBytes),
      peak_mib: mib(memory.peakBytes),
    });
    checks.check('no error-level log line', gateway.errorLines.length === 0, gateway.errorLines.slice(0, 3));
    record('call-flood', {
      // The machine's load during the run: on a shared machine the 2 s login bound depends on it.
      load_average: os.loadavg().map((n) => Math.round(n * 10) / 10),
      others: OTHERS,
      flood_per_second: FLOOD_PER_SECOND,
      flood_s: FLOOD_MS / 1000,
      slow_ms: SLOW_MS,
      flood_sent: flood.sent,
      flood_refused: flood.refused,
      flood_served: flood.results,
      logins_served: loginMs.length,
      login_ms: {
        p50: Math.round(percentile(loginMs, 50)),
        p99: Math.round(percentile(loginMs, 99)),
        max: Math.round(maxLoginMs),
      },
      calls_served: callMs.length,
      call_ms: {
        p50: Math.round(percentile(callMs, 50)),
        p99: Math.round(percentile(callMs, 99)),
        max: Math.round(Math.max(...callMs)),
      },
      failures: failures.length,
      rss_mib: { start: mib(memory.startBytes), peak: mib(memory.peakBytes), last: mib(memory.lastBytes) },
      checks: checks.summary,
    });
    await flooder.close();
    checks.assertAll();
  });
});
