import type { Socket } from 'node:net';
import { LoadClient, api, pool } from './lib/clients';
import { GatewayProcess } from './lib/gateway';
import { sized } from './lib/profile';
import { Checks, record } from './lib/report';
import { LoadUpstream } from './lib/upstream';

const FAST = sized({ short: 20, full: 50 });
const SLOW = sized({ short: 6, full: 20 });
const MESSAGES = sized({ short: 2000, full: 5000 });
const PAD = 'p'.repeat(sized({ short: 8 * 1024, full: 4 * 1024 }));

describe('slow consumers among fast ones (issue 11)', () => {
  let gateway: GatewayProcess;
  let upstream: LoadUpstream;
  afterAll(async () => {
    await gateway?.stop();
    await upstream?.close();
  });

  it('closes every slow consumer with 1008 slow_consumer while the fast ones lose nothing', async () => {
    const checks = new Checks();
    upstream = await LoadUpstream.start();
    gateway = await GatewayProcess.start({
      UPSTREAM_URL: upstream.url,
      CLIENT_QUEUE_MAX_BYTES: '256KiB',
      PING_INTERVAL: '60s',
    });
    const fast: LoadClient[] = [];
    const slow: LoadClient[] = [];
    await pool(FAST + SLOW, 16, async (i) => {
      const client = await LoadClient.open(gateway.wsUrl, `user=${i < FAST ? 'fast' : 'slow'}${i}`);
      (i < FAST ? fast : slow).push(client);
      expect(await api(gateway.apiUrl, 'PUT', `/v1/connection/${client.cid}/subscriptions/feed`)).toBe(204);
    });
    const received = new Map<LoadClient, number[]>();
    for (const client of fast) {
      const seqs: number[] = [];
      received.set(client, seqs);
      client.onFrame = (f) => f[0] === 'message' && seqs.push((f[2] as { seq: number }).seq);
    }
    const slowCids = new Set(slow.map((c) => c.cid));
    const slowClosedLines: Array<Record<string, unknown>> = [];
    gateway.lineListeners.push(
      (e) => void (e.msg === 'connection closed' && slowCids.has(String(e.connection_id)) && slowClosedLines.push(e)),
    );
    for (const client of slow) (client.socket as unknown as { _socket: Socket })._socket.pause();

    // Half the slow clients read again as soon as every slow one is closed (well within the 5 s
    // the gateway gives a closing handshake), and see the close frame queued behind their backlog;
    // the others never read again and are cut.
    const resumed = slow.slice(0, SLOW / 2);
    let isResumed = false;
    const started = Date.now();
    for (let seq = 0; seq < MESSAGES; seq++) {
      expect(await api(gateway.apiUrl, 'POST', '/v1/publish/feed', { seq, pad: PAD })).toBe(204);
      if (
        !isResumed &&
        seq % 25 === 0 &&
        (await gateway.metrics()).get('gateway_slow_consumer_closes_total') === SLOW
      ) {
        isResumed = true;
        for (const client of resumed) (client.socket as unknown as { _socket: Socket })._socket.resume();
      }
    }
    const publishSeconds = (Date.now() - started) / 1000;
    if (!isResumed) for (const client of resumed) (client.socket as unknown as { _socket: Socket })._socket.resume();
    const resumedCloses = await Promise.all(resumed.map((c) => c.closedWithin(15_000).catch(() => null)));
    // A barrier: one more message after the rest; each fast client has all once it has this one.
    expect(await api(gateway.apiUrl, 'POST', '/v1/publish/feed', { seq: MESSAGES, pad: '' })).toBe(204);
    await Promise.all(
      fast.map(async (c) => {
        for (const deadline = Date.now() + 30_000; (received.get(c)!.at(-1) ?? -1) < MESSAGES && Date.now() < deadline;)
          await c.call('echo');
      }),
    );
    const untilGauge = Date.now() + 15_000;
    while ((await gateway.gauges()).gateway_connections !== FAST && Date.now() < untilGauge) await fast[0].call('echo');

    const metrics = await gateway.metrics();
    const lossy = fast.filter(
      (c) => received.get(c)!.some((seq, i) => seq !== i) || received.get(c)!.length !== MESSAGES + 1,
    );
    checks.check(
      'every fast client got every message in order',
      lossy.length === 0,
      lossy.map((c) => received.get(c)!.length),
    );
    checks.check(
      'every fast client still connected',
      fast.every((c) => c.isOpen),
    );
    checks.check(
      'every slow client closed (gauge back to the fast ones)',
      (await gateway.gauges()).gateway_connections === FAST,
      await gateway.gauges(),
    );
    checks.check(
      'gateway_slow_consumer_closes_total counts every slow client',
      metrics.get('gateway_slow_consumer_closes_total') === SLOW,
      metrics.get('gateway_slow_consumer_closes_total'),
    );
    checks.check(
      'a slow client that reads again sees 1008 slow_consumer',
      resumedCloses.every((c) => c?.code === 1008 && c.reason === 'slow_consumer'),
      resumedCloses,
    );
    checks.check(
      'each slow client has a "connection closed" log line saying 1008 slow_consumer',
      slowClosedLines.length === SLOW && slowClosedLines.every((e) => e.code === 1008 && e.reason === 'slow_consumer'),
      slowClosedLines,
    );
    checks.check(
      'no fast client was closed as slow',
      fast.every((c) => !slowCids.has(c.cid) && c.closeInfo === null),
    );
    checks.check('no error-level log line', gateway.errorLines.length === 0, gateway.errorLines.slice(0, 3));
    record('slow-consumers', {
      fast: FAST,
      slow: SLOW,
      messages: MESSAGES,
      message_bytes: PAD.length + 20,
      publish_per_second: Math.round(MESSAGES / publishSeconds),
      slow_consumer_closes: metrics.get('gateway_slow_consumer_closes_total'),
      resumed_slow_closes: resumedCloses,
      checks: checks.summary,
    });
    await Promise.all([...fast, ...slow].map((c) => c.close(1000)));
    checks.assertAll();
  });
});
