import { execFileSync } from 'node:child_process';
import { LoadClient, api, pool } from './lib/clients';
import { GatewayProcess } from './lib/gateway';
import { sized } from './lib/profile';
import { Checks, mib, percentile, record } from './lib/report';
import { LoadUpstream } from './lib/upstream';

/** The most connections `ulimit -n` leaves room for on both sides (each side also needs its listeners and pools). */
const FD_LIMIT = Number(execFileSync('sh', ['-c', 'ulimit -n']).toString().trim()) || 1024;
const CONNECTIONS = sized({ short: 1000, full: Math.min(20_000, FD_LIMIT - 1000) });
const DURATION_MS = sized({ short: 25_000, full: 600_000 });
const WARM_UP_FRACTION = 0.2;
const SAMPLE_EVERY_MS = sized({ short: 2_000, full: 10_000 });
const TOPICS = 200;
const PUBLISH_PER_SECOND = 50;
const CALLERS = 100;
const CALLS_PER_CALLER_PER_SECOND = 10;
const GROWTH_TOLERANCE = 0.1;

interface Sample {
  readonly atS: number;
  readonly rssBytes: number;
  readonly heapBytes: number;
  readonly lagP99S: number;
}

describe('soak (issue 11)', () => {
  let gateway: GatewayProcess;
  let upstream: LoadUpstream;
  const clients: LoadClient[] = [];
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await gateway?.stop();
    await upstream?.close();
  });

  it(`holds ${CONNECTIONS} subscribed connections under publish and call load: flat memory, nothing lost`, async () => {
    const checks = new Checks();
    upstream = await LoadUpstream.start();
    gateway = await GatewayProcess.start({ UPSTREAM_URL: upstream.url, LOG_LEVEL: 'info', PING_INTERVAL: '10s' });
    const opening = Date.now();
    await pool(
      CONNECTIONS,
      200,
      async (i) => void clients.push(await LoadClient.open(gateway.wsUrl, `user=soak${i % 5000}`, { ms: 60_000 })),
    );
    const connectSeconds = (Date.now() - opening) / 1000;
    const nextSeq = new Map<LoadClient, number>();
    const gaps = new Map<LoadClient, number>();
    await pool(clients.length, 64, async (i) => {
      const client = clients[i];
      const topic = i % TOPICS;
      nextSeq.set(client, 0);
      client.onFrame = (f) => {
        if (f[0] !== 'message') return;
        const seq = (f[2] as { seq: number }).seq;
        if (seq !== nextSeq.get(client)) gaps.set(client, (gaps.get(client) ?? 0) + 1);
        nextSeq.set(client, seq + 1);
      };
      const status = await api(gateway.apiUrl, 'PUT', `/v1/connection/${client.cid}/subscriptions/soak/${topic}`);
      if (status !== 204) throw new Error(`subscription answered ${status}`);
    });

    const published = new Array<number>(TOPICS).fill(0);
    const callFailures: string[] = [];
    let calls = 0;
    const samples: Sample[] = [];
    const begin = Date.now();
    const until = begin + DURATION_MS;
    let warmHeap = 0;
    let warmRss = 0;
    const publisher = (async () => {
      for (let k = 0; Date.now() < until; k++) {
        const topic = k % TOPICS;
        const status = await api(gateway.apiUrl, 'POST', `/v1/publish/soak/${topic}`, {
          seq: published[topic],
          at: Date.now(),
        });
        if (status !== 204) throw new Error(`publish answered ${status}`);
        published[topic]++;
        const due = begin + ((k + 1) * 1000) / PUBLISH_PER_SECOND;
        if (due > Date.now()) await new Promise((resolve) => setTimeout(resolve, due - Date.now())); // pacing the load, not a wait for an event
      }
    })();
    const callers = clients.slice(0, CALLERS).map(async (client, n) => {
      for (let k = 0; Date.now() < until; k++) {
        const reply = await client.call('echo', [n, k]).catch((err: Error) => ['lost', {}, err.message]);
        calls++;
        if (reply[0] !== 'result') callFailures.push(JSON.stringify(reply).slice(0, 200));
        const due = begin + ((k + 1) * 1000) / CALLS_PER_CALLER_PER_SECOND;
        if (due > Date.now()) await new Promise((resolve) => setTimeout(resolve, due - Date.now())); // pacing the load
      }
    });
    const sampler = (async () => {
      let warmDone = false;
      while (Date.now() < until) {
        await new Promise((resolve) => setTimeout(resolve, SAMPLE_EVERY_MS)); // sampling period
        const m = await gateway.metrics();
        samples.push({
          atS: (Date.now() - begin) / 1000,
          rssBytes: gateway.rssBytes(),
          heapBytes: m.get('nodejs_heap_size_used_bytes') ?? NaN,
          lagP99S: m.get('nodejs_eventloop_lag_p99_seconds') ?? NaN,
        });
        if (!warmDone && Date.now() - begin >= DURATION_MS * WARM_UP_FRACTION) {
          warmDone = true;
          warmHeap = await gateway.heapAfterGc();
          warmRss = gateway.rssBytes();
        }
      }
    })();
    await Promise.all([publisher, ...callers, sampler]);
    const endHeap = await gateway.heapAfterGc();
    const endRss = gateway.rssBytes();

    // Barrier: one last message per topic; every client has everything once it has its topic's last.
    for (let topic = 0; topic < TOPICS; topic++) {
      expect(
        await api(gateway.apiUrl, 'POST', `/v1/publish/soak/${topic}`, { seq: published[topic], last: true }),
      ).toBe(204);
      published[topic]++;
    }
    const complete = (): boolean => clients.every((c, i) => nextSeq.get(c) === published[i % TOPICS]);
    for (const deadline = Date.now() + 60_000; !complete() && Date.now() < deadline;) await clients[0].call('echo');
    const lost = clients.reduce((n, c, i) => n + (published[i % TOPICS] - (nextSeq.get(c) ?? 0)), 0);
    const delivered = clients.reduce((n, c) => n + (nextSeq.get(c) ?? 0), 0);
    const lags = samples.map((s) => s.lagP99S * 1000);
    const growth = (end: number, start: number): number => Math.round(((end - start) / start) * 1000) / 10;

    checks.check(`${CONNECTIONS} connections opened`, clients.length === CONNECTIONS, clients.length);
    checks.check('zero lost messages', lost === 0 && gaps.size === 0, { lost, clientsWithGaps: gaps.size });
    checks.check('every call answered with its result', callFailures.length === 0, callFailures.slice(0, 5));
    checks.check(
      'every connection still open',
      clients.every((c) => c.isOpen),
      clients.filter((c) => !c.isOpen).length,
    );
    checks.check(
      `heap after GC flat after warm-up (within ${GROWTH_TOLERANCE * 100}%)`,
      endHeap <= warmHeap * (1 + GROWTH_TOLERANCE),
      { warmHeap, endHeap },
    );
    checks.check(
      `RSS flat after warm-up (within ${GROWTH_TOLERANCE * 100}%)`,
      endRss <= warmRss * (1 + GROWTH_TOLERANCE),
      { warmRss, endRss },
    );
    checks.check('no error-level log line', gateway.errorLines.length === 0, gateway.errorLines.slice(0, 3));
    record('soak', {
      connections: CONNECTIONS,
      fd_limit: FD_LIMIT,
      connect_seconds: connectSeconds,
      duration_s: DURATION_MS / 1000,
      topics: TOPICS,
      publishes: published.reduce((a, b) => a + b, 0),
      messages_delivered: delivered,
      lost,
      calls,
      call_failures: callFailures.length,
      heap_after_gc_mib: { after_warm_up: mib(warmHeap), end: mib(endHeap), growth_percent: growth(endHeap, warmHeap) },
      rss_mib: {
        after_warm_up: mib(warmRss),
        end: mib(endRss),
        growth_percent: growth(endRss, warmRss),
        peak: mib(Math.max(...samples.map((s) => s.rssBytes))),
      },
      event_loop_lag_p99_ms: {
        median_of_samples: percentile(lags, 50),
        max_of_samples: Math.max(...lags),
        note: 'prom-client nodejs_eventloop_lag_p99_seconds per scrape; its monitor resolution is 10 ms',
      },
      samples: samples.map((s) => [Math.round(s.atS), mib(s.rssBytes), mib(s.heapBytes), Math.round(s.lagP99S * 1000)]),
      checks: checks.summary,
    });
    checks.assertAll();
  });
});
