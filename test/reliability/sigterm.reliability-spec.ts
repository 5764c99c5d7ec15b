import { Frame, LoadClient, SEED, pool, rng } from './lib/clients';
import { GatewayProcess } from './lib/gateway';
import { sized } from './lib/profile';
import { Checks, record } from './lib/report';
import { LoadUpstream } from './lib/upstream';

const CLIENTS = sized({ short: 30, full: 300 });
const IN_FLIGHT_PER_CLIENT = 5;

describe('SIGTERM under load (issue 11)', () => {
  let gateway: GatewayProcess;
  let upstream: LoadUpstream;
  afterAll(async () => {
    await gateway?.stop();
    await upstream?.close();
  });

  it('answers every in-flight call before closing clients with 1001, then exits 0', async () => {
    const checks = new Checks();
    const r = rng(SEED);
    upstream = await LoadUpstream.start();
    // Enough upstream sockets for every call to be in flight at once: each takes at most 1.5 s, far inside the grace.
    gateway = await GatewayProcess.start({
      UPSTREAM_URL: upstream.url,
      UPSTREAM_MAX_SOCKETS: String(CLIENTS * IN_FLIGHT_PER_CLIENT + 10),
      SHUTDOWN_GRACE: '10s',
      PING_INTERVAL: '60s',
    });
    const clients: LoadClient[] = [];
    await pool(CLIENTS, 16, async (i) => void clients.push(await LoadClient.open(gateway.wsUrl, `user=u${i}`)));

    let stopping = false;
    const calls: Array<Promise<Frame>> = [];
    const sentBeforeSignal = { count: 0 };
    const loops = clients.map(async (client) => {
      const slot = async (): Promise<void> => {
        while (!stopping) {
          const call = client
            .call('work', [], { delay_ms: 200 + r.int(1300) }, 20_000)
            .catch((err: Error) => ['lost', {}, err.message] as Frame);
          calls.push(call);
          await call;
        }
      };
      await Promise.all(Array.from({ length: IN_FLIGHT_PER_CLIENT }, slot));
    });
    // Let the load settle: every client has completed a round of calls.
    await Promise.all(clients.map((c) => c.call('work', [], { delay_ms: 100 }, 30_000)));
    stopping = true; // clients send nothing after the signal
    sentBeforeSignal.count = calls.length;
    const inFlight = clients.reduce((n, c) => n + c.inFlight, 0);
    const signalledAt = Date.now();
    gateway.kill('SIGTERM');
    // The signal reaches the gateway asynchronously: ask until readiness turns (bounded), while calls are still in flight.
    const ready = await (async (): Promise<number | string> => {
      let last: number | string = 'no answer';
      for (const deadline = Date.now() + 3000; Date.now() < deadline && last !== 503;) {
        last = await fetch(gateway.apiUrl + '/health/ready').then(
          (res) => res.status,
          (err: Error) => err.message,
        );
      }
      return last;
    })();
    const closes = await Promise.all(clients.map((c) => c.closedWithin(15_000).catch(() => null)));
    const replies = await Promise.all(calls);
    await Promise.all(loops);
    const exit = await gateway.exit(15_000);
    const drainSeconds = (Date.now() - signalledAt) / 1000;

    const notResults = replies.filter((f) => f[0] !== 'result');
    checks.check('at least one call in flight per client at SIGTERM', inFlight >= CLIENTS, inFlight);
    checks.check(
      'every call sent before SIGTERM got its result',
      notResults.length === 0 && replies.length === sentBeforeSignal.count,
      notResults.slice(0, 5),
    );
    checks.check(
      'every client closed with 1001',
      closes.every((c) => c?.code === 1001),
      closes.filter((c) => c?.code !== 1001).slice(0, 5),
    );
    checks.check('readiness 503 while draining', ready === 503, ready);
    checks.check('exit code 0', exit.code === 0 && exit.signal === null, exit);
    checks.check('no error-level log line', gateway.errorLines.length === 0, gateway.errorLines.slice(0, 3));
    record('sigterm', {
      clients: CLIENTS,
      calls: replies.length,
      in_flight_at_sigterm: inFlight,
      drain_seconds: drainSeconds,
      ready_while_draining: ready,
      exit,
      checks: checks.summary,
    });
    checks.assertAll();
  });
});
