import WebSocket from 'ws';
import { FatalError, GatewayClient, type CallError, type Disconnect } from '../../client/src';
import { ChildGateway, buildGateway } from './harness/child-gateway';
import { FakeUpstream } from './harness/fake-upstream';
import { TestGateway, startTestGateway } from './harness/gateway';
import { api } from './harness/http';
import { untilMetric } from './harness/metrics';
import { SdkClients, nextEvent, untilChange } from './harness/sdk-client';
import { connectionIdOf, expectPut } from './harness/v1';

/**
 * The client SDK (client/src) in Node with `ws`, against the real gateway:
 * calls and their errors, fatal errors, reconnects after the gateway closes
 * the socket, restarts or is killed; pending calls settle; mirrors converge.
 */
const AUTH = '/gateway/authorize_connection';

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    (value) => new Error(`expected a rejection, got ${JSON.stringify(value)}`),
    (err: unknown) => err,
  );
}

/** Collects a client's disconnects from now on. */
function disconnectsOf(client: GatewayClient): Disconnect[] {
  const seen: Disconnect[] = [];
  client.on('disconnect', (info) => seen.push(info));
  return seen;
}

describe('client SDK against the real gateway', () => {
  const sdk = new SdkClients();
  afterEach(() => sdk.closeAll());

  describe('one gateway', () => {
    let t: TestGateway;
    afterEach(() => t.close());

    it('connects, resolves results and maps every error frame to its typed kind', async () => {
      t = await startTestGateway();
      t.upstream.on('POST /rooms/missing', { status: 404, json: { error: 'no room' } });
      t.upstream.on('POST /rooms/garbled', { text: '{"oops' });
      t.upstream.on('POST /rooms/slow', 'hang');
      const client = sdk.create(`${t.wsUrl}/?user=alice`);
      expect(await client.connect()).toEqual({ user_id: 'alice' });
      expect([client.status, client.protocol]).toEqual(['connected', 'v1.gateway-lattice+json']);

      expect(await client.call('rooms.echo', ['hi'], { k: 1 })).toEqual({ args: ['hi'], kwargs: { k: 1 } });
      expect(await rejection(client.call('rooms.missing'))).toMatchObject({
        name: 'CallError',
        kind: 'http_error',
        status: 404,
        body: { error: 'no room' },
      });
      expect(await rejection(client.call('rooms.garbled'))).toMatchObject({ kind: 'data_error' });
      expect(await rejection(client.call('gateway.secret'))).toMatchObject({
        kind: 'validation_error',
        text: 'invalid method',
      });
      expect(await rejection(client.call('rooms.slow', [], {}, { timeoutMs: 100 }))).toMatchObject({
        kind: 'timeout',
        timeoutMs: 100,
      });
      const controller = new AbortController();
      const aborted = client.call('rooms.slow', [], {}, { signal: controller.signal });
      await t.upstream.requestTo('/rooms/slow');
      await t.upstream.requestTo('/rooms/slow');
      controller.abort();
      expect(await rejection(aborted)).toMatchObject({ kind: 'aborted' });
      // The connection is still fine after all that.
      expect(await client.call('rooms.echo', [2])).toEqual({ args: [2], kwargs: {} });
    });

    it('speaks the legacy subprotocol when only that one is offered', async () => {
      t = await startTestGateway();
      const client = sdk.create(`${t.wsUrl}/?user=alice`, { protocols: ['v1.swindon-lattice+json'] });
      await client.connect();
      expect(client.protocol).toBe('v1.swindon-lattice+json');
      expect(await client.call('rooms.echo', [1])).toEqual({ args: [1], kwargs: {} });
    });

    it('rejects connect() with a FatalError (4401, the backend body) and stays closed', async () => {
      t = await startTestGateway();
      t.upstream.on(`POST ${AUTH}`, { status: 401, json: { error: 'log in first' } });
      const client = sdk.create(`${t.wsUrl}/?user=alice`);
      const error = await rejection(client.connect());
      expect(error).toBeInstanceOf(FatalError);
      expect(error).toMatchObject({
        code: 4401,
        errorKind: 'http_error',
        status: 401,
        data: { error: 'log in first' },
      });
      expect(client.status).toBe('closed');
      expect(await rejection(client.call('rooms.echo'))).toMatchObject({
        kind: 'connection_lost',
        sent: false,
        fatal: { code: 4401 },
      });
      expect(t.upstream.requests.filter((r) => r.path === AUTH)).toHaveLength(1);
    });

    it('retries a 4500 authorization failure and connects on the next attempt', async () => {
      t = await startTestGateway();
      let authorizations = 0;
      t.upstream.on(`POST ${AUTH}`, () =>
        ++authorizations === 1 ? { status: 500, json: { error: 'db down' } } : { json: { user_id: 'alice' } },
      );
      const client = sdk.create(`${t.wsUrl}/?user=alice`);
      const disconnects = disconnectsOf(client);
      expect(await client.connect()).toEqual({ user_id: 'alice' });
      expect(disconnects).toHaveLength(1);
      expect(disconnects[0].fatal).toMatchObject({ code: 4500, status: 500, data: { error: 'db down' } });
      expect(disconnects[0].retryInMs).toBeLessThanOrEqual(50);
    });

    it('reconnects after the gateway closes the socket (fatal 1009), settling the call that caused it', async () => {
      t = await startTestGateway({ MAX_FRAME_BYTES: '1KiB' });
      const client = sdk.create(`${t.wsUrl}/?user=alice`);
      await client.connect();
      const reconnected = nextEvent(client, 'reconnected');
      const tooBig = (await rejection(client.call('rooms.echo', ['x'.repeat(2000)]))) as CallError;
      expect(tooBig).toMatchObject({
        kind: 'connection_lost',
        sent: true,
        fatal: { code: 1009, errorKind: 'validation_error' },
      });
      expect(await reconnected).toEqual([{ user_id: 'alice' }]);
      expect(await client.call('rooms.echo', ['ok'])).toEqual({ args: ['ok'], kwargs: {} });
    });

    it('resumes its session after the gateway drops it for not answering pings', async () => {
      t = await startTestGateway({ PING_INTERVAL: '200ms' });
      /** A `ws` that never answers pings: the gateway sees a dead peer. */
      class DeafWebSocket extends WebSocket {
        constructor(url: string, protocols: string[]) {
          super(url, protocols, { autoPong: false });
        }
      }
      const client = sdk.create(`${t.wsUrl}/?user=alice`, {
        WebSocket: DeafWebSocket,
        probe: false,
        pingIntervalMs: 60_000,
      });
      await client.connect();
      const disconnect = nextEvent(client, 'disconnect');
      const resumed = nextEvent(client, 'resumed');
      expect((await disconnect)[0]).toMatchObject({ code: 1006, fatal: null });
      // SPEC §12.2: a ping timeout detaches the session; the client resumes it.
      expect(await resumed).toEqual([{ lost: [], replayed: 0 }]);
      expect(client.status).toBe('connected');
    });

    it('reconnects by itself when nothing arrives for 3 ping intervals, and probes keep a quiet connection alive', async () => {
      t = await startTestGateway(); // PING_INTERVAL 10s: the gateway stays silent meanwhile
      const silent = sdk.create(`${t.wsUrl}/?user=alice`, { pingIntervalMs: 100, probe: false });
      await silent.connect();
      const lost = nextEvent(silent, 'disconnect');
      expect((await lost)[0]).toMatchObject({ code: 1006, reason: 'no traffic for 3 ping intervals' });
      await nextEvent(silent, 'hello');
      silent.close();

      const probing = sdk.create(`${t.wsUrl}/?user=bob`, { pingIntervalMs: 250 });
      const disconnects = disconnectsOf(probing);
      await probing.connect();
      // Each probe is answered by the gateway itself (counted as an invalid frame, no upstream call).
      const upstreamCalls = t.upstream.requests.length;
      await untilMetric(t.apiUrl, 'gateway_client_frames_total{outcome="invalid"}', (count) => count >= 6, 5000);
      expect([disconnects, probing.status, t.upstream.requests.length]).toEqual([[], 'connected', upstreamCalls]);
    });

    it('keeps lattice and users mirrors in step with the backend', async () => {
      t = await startTestGateway();
      const alice = sdk.create(`${t.wsUrl}/?user=alice`);
      await alice.connect();
      const cid = await connectionIdOf(t.upstream, 'user=alice', 5000);
      const rooms = alice.lattice('rooms');
      const changes: unknown[] = [];
      rooms.onChange((c) => changes.push(c));
      await expectPut(t.apiUrl, `/v1/connection/${cid}/lattices/rooms`, {
        shared: { lobby: { last_message_counter: 3 }, hidden: { last_message_counter: 9 } },
        private: { alice: { lobby: { last_seen_counter: 1 } } },
      });
      await untilChange(
        (l) => rooms.onChange(l),
        () => rooms.counter('lobby', 'last_message_counter') === 3,
        'the rooms snapshot',
        () => rooms.get('lobby'),
      );
      expect(rooms.keys()).toEqual(['lobby']);
      expect(rooms.get('lobby')).toEqual({ last_message_counter: 3, last_seen_counter: 1 });
      expect(changes).toEqual([[{ key: 'lobby', variables: ['last_message_counter', 'last_seen_counter'] }]]);

      await api(t.apiUrl, 'POST', '/v1/lattice/rooms', { shared: { lobby: { last_message_counter: 5 } } });
      await untilChange(
        (l) => rooms.onChange(l),
        () => rooms.counter('lobby', 'last_message_counter') === 5,
        'the counter update',
        () => rooms.get('lobby'),
      );
      expect(changes[1]).toEqual([{ key: 'lobby', variables: ['last_message_counter'] }]);

      const users = alice.users();
      await expectPut(t.apiUrl, `/v1/connection/${cid}/users`, ['alice', 'bob']);
      await untilChange(
        (l) => users.onChange(l),
        () => users.status('bob') === 'offline',
        'bob offline',
        () => users.list(),
      );
      expect(users.status('alice')).toBe('active');
      const bob = sdk.create(`${t.wsUrl}/?user=bob`);
      await bob.connect();
      await untilChange(
        (l) => users.onChange(l),
        () => users.status('bob') === 'active',
        'bob active',
        () => users.list(),
      );
      expect(users.list().map((u) => [u.userId, u.status])).toEqual([
        ['alice', 'active'],
        ['bob', 'active'],
      ]);
    });
  });

  describe('gateway restarts', () => {
    let upstream: FakeUpstream;
    let first: TestGateway | null = null;
    let second: TestGateway | null = null;
    beforeEach(async () => (upstream = await FakeUpstream.start()));
    afterEach(async () => {
      await first?.close();
      await second?.close();
      await upstream.close();
      first = second = null;
    });

    it('settles calls, waits with queued calls through failed attempts, and merges new snapshots into the kept mirrors', async () => {
      const env = { UPSTREAM_URL: upstream.url, SHUTDOWN_GRACE: '200ms' };
      first = await startTestGateway(env);
      const port = first.gateway.publicAddress.port;
      upstream.on('POST /rooms/slow', 'hang');
      const client = sdk.create(`ws://127.0.0.1:${port}/?user=alice`);
      const disconnects = disconnectsOf(client);
      await client.connect();
      const cid = await connectionIdOf(upstream, 'user=alice', 5000);
      await expectPut(first.apiUrl, `/v1/connection/${cid}/lattices/rooms`, {
        shared: { lobby: { last_message_counter: 3 } },
        private: { alice: { lobby: {} } },
      });
      const rooms = client.lattice('rooms');
      await untilChange(
        (l) => rooms.onChange(l),
        () => rooms.counter('lobby', 'last_message_counter') === 3,
        'the first snapshot',
        () => rooms.get('lobby'),
      );

      const inFlight = rejection(client.call('rooms.slow'));
      await upstream.requestTo('/rooms/slow');
      await first.close();
      first = null;
      expect(await inFlight).toMatchObject({ kind: 'connection_lost', sent: true, fatal: null });
      expect(disconnects[0]).toMatchObject({ code: 1012, reason: 'service_restart' }); // a resumable session: SPEC §12.5
      expect(client.status).toBe('reconnecting');

      const waiting = client.call('rooms.echo', ['queued'], {}, { timeoutMs: 20_000 });
      const impatient = rejection(client.call('rooms.echo', ['late'], {}, { timeoutMs: 100 }));
      expect(await impatient).toMatchObject({ kind: 'timeout' });
      // Two more attempts fail (nothing listens on the port) while the call waits.
      await untilChange(
        (l) => client.on('disconnect', l),
        () => disconnects.length >= 3,
        'two failed attempts',
        () => disconnects,
      );

      const reconnected = nextEvent(client, 'reconnected', 10_000);
      second = await startTestGateway({ ...env, PORT: String(port) });
      await reconnected;
      expect(await waiting).toEqual({ args: ['queued'], kwargs: {} });
      // The new gateway knows nothing yet: the mirror keeps what it had until the backend re-sends state.
      expect(rooms.get('lobby')).toEqual({ last_message_counter: 3 });
      const newCid = await connectionIdOf(upstream, 'user=alice', 5000);
      await expectPut(second.apiUrl, `/v1/connection/${newCid}/lattices/rooms`, {
        shared: { lobby: { last_message_counter: 4 } },
        private: { alice: { lobby: { last_seen_counter: 4 } } },
      });
      await untilChange(
        (l) => rooms.onChange(l),
        () => rooms.counter('lobby', 'last_seen_counter') === 4,
        'the new snapshot merged',
        () => rooms.get('lobby'),
      );
      expect(rooms.get('lobby')).toEqual({ last_message_counter: 4, last_seen_counter: 4 });
    });
  });

  describe('the gateway process is killed', () => {
    let upstream: FakeUpstream;
    const children: ChildGateway[] = [];
    beforeAll(() => buildGateway(120_000), 120_000);
    beforeEach(async () => (upstream = await FakeUpstream.start()));
    afterEach(async () => {
      for (const child of children.splice(0)) await child.stop();
      await upstream.close();
    });

    it('loses the in-flight call at once and reconnects to the restarted process', async () => {
      const killed = await ChildGateway.start({ UPSTREAM_URL: upstream.url }, 15_000);
      children.push(killed);
      upstream.on('POST /rooms/slow', 'hang');
      const client = sdk.create(`${killed.wsUrl}/?user=alice`);
      await client.connect();
      const inFlight = rejection(client.call('rooms.slow'));
      await upstream.requestTo('/rooms/slow');
      const lost = nextEvent(client, 'disconnect');
      killed.kill('SIGKILL');
      expect((await lost)[0]).toMatchObject({ code: 1006, fatal: null });
      expect(await inFlight).toMatchObject({ kind: 'connection_lost', sent: true });

      const reconnected = nextEvent(client, 'reconnected', 20_000);
      children.push(await ChildGateway.start({ UPSTREAM_URL: upstream.url, PORT: String(killed.publicPort) }, 15_000));
      await reconnected;
      expect(await client.call('rooms.echo', ['back'])).toEqual({ args: ['back'], kwargs: {} });
    }, 60_000);
  });
});
