import { ChildGateway, buildGateway } from './harness/child-gateway';
import { FakeUpstream } from './harness/fake-upstream';
import { untilStatus } from './harness/http';
import { deferred } from './harness/wait';
import { HandshakeRefused, WsClient } from './harness/ws-client';

const GRACE_MS = 5000;

/** SPEC §10 graceful shutdown, on `node dist/main.js` as production runs it. */
describe('graceful shutdown (SPEC §10)', () => {
  let upstream: FakeUpstream;
  let gateway: ChildGateway | undefined;
  const clients: WsClient[] = [];

  // The child runs dist/, so build the current sources first.
  beforeAll(() => buildGateway(120_000), 120_000);

  beforeEach(async () => {
    upstream = await FakeUpstream.start();
    gateway = await ChildGateway.start({
      UPSTREAM_URL: upstream.url,
      SHUTDOWN_GRACE: `${GRACE_MS / 1000}s`,
      LOG_LEVEL: 'info',
    });
  });

  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
    await gateway?.stop();
    await upstream.close();
  });

  async function hello(): Promise<WsClient> {
    const { client } = await WsClient.hello(gateway!.wsUrl);
    clients.push(client);
    return client;
  }

  it('on SIGTERM turns unready, finishes the in-flight call, closes the client with 1001 and exits 0 within the grace', async () => {
    const g = gateway!;
    upstream.on('POST /slow', { json: { done: true }, delayMs: 500 });
    const client = await hello();
    client.send(['slow', { request_id: 1 }, [], {}]);
    await upstream.requestTo('/slow');

    const signalledAt = Date.now();
    g.kill('SIGTERM');
    const ready = await untilStatus(`${g.apiUrl}/health/ready`, 503);
    expect(ready.json()).toMatchObject({
      status: 'error',
      error: { accepting: { status: 'down', reason: 'draining' } },
    });
    expect((await fetch(`${g.apiUrl}/health/live`)).status).toBe(200);
    await expect(WsClient.connect(g.wsUrl)).rejects.toThrow(HandshakeRefused);

    expect(await client.next(GRACE_MS)).toEqual(['result', { request_id: 1 }, { done: true }]);
    expect(await client.closed(GRACE_MS)).toEqual({ code: 1001, reason: 'shutdown' });
    expect(await g.exit(GRACE_MS)).toEqual({ code: 0, signal: null });
    expect(Date.now() - signalledAt).toBeLessThan(GRACE_MS);
    expect(g.logs).toContainEqual(expect.objectContaining({ msg: 'shutdown requested', signal: 'SIGTERM' }));
  }, 20_000);

  it('while draining, both listeners answer /health/ready 503 and /health/live 200, new upgrades get 503, and the exit is logged', async () => {
    const g = gateway!;
    const release = deferred();
    upstream.on('POST /slow', async () => {
      await release.promise;
      return { json: { done: true } };
    });
    const client = await hello();
    client.send(['slow', { request_id: 1 }, [], {}]);
    await upstream.requestTo('/slow');

    g.kill('SIGTERM');
    // The drain lasts until the call is released: everything below is seen during it.
    for (const url of [g.publicUrl, g.apiUrl]) {
      const ready = await untilStatus(`${url}/health/ready`, 503);
      expect(ready.json()).toMatchObject({
        status: 'error',
        error: { accepting: { status: 'down', reason: 'draining' } },
      });
      expect((await fetch(`${url}/health/live`)).status).toBe(200);
    }
    const refused = await WsClient.connect(g.wsUrl).then(
      () => null,
      (err: unknown) => err,
    );
    expect(refused).toBeInstanceOf(HandshakeRefused);
    expect(refused).toMatchObject({ status: 503, body: 'shutting down\n' });
    expect(g.logs.filter((entry) => entry.msg === 'gateway stopped')).toEqual([]);

    release.resolve();
    expect(await client.next(GRACE_MS)).toEqual(['result', { request_id: 1 }, { done: true }]);
    expect(await client.closed(GRACE_MS)).toEqual({ code: 1001, reason: 'shutdown' });
    expect(await g.exit(GRACE_MS)).toEqual({ code: 0, signal: null });
    expect(g.logs[g.logs.length - 1]).toMatchObject({ level: 'info', msg: 'gateway stopped', exit_code: 0 });
  }, 20_000);

  it('on SIGINT turns unready, closes the client with 1001 and exits 0', async () => {
    const g = gateway!;
    // A call in flight keeps the drain open until it is answered, so the 503 is there to be seen
    // (without one the gateway may be gone before the first poll: Node 26 was).
    const release = deferred();
    upstream.on('POST /slow', async () => {
      await release.promise;
      return { json: { done: true } };
    });
    const client = await hello();
    client.send(['slow', { request_id: 1 }, [], {}]);
    await upstream.requestTo('/slow');
    g.kill('SIGINT');
    await untilStatus(`${g.apiUrl}/health/ready`, 503);
    release.resolve();
    expect(await client.next(GRACE_MS)).toEqual(['result', { request_id: 1 }, { done: true }]);
    expect(await client.closed(GRACE_MS)).toEqual({ code: 1001, reason: 'shutdown' });
    expect(await g.exit(GRACE_MS)).toEqual({ code: 0, signal: null });
    expect(g.logs).toContainEqual(expect.objectContaining({ msg: 'shutdown requested', signal: 'SIGINT' }));
  }, 20_000);
});
