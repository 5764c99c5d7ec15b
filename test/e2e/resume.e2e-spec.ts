import type { Socket } from 'node:net';
import { TestGateway, startTestGateway } from './harness/gateway';
import { api } from './harness/http';
import { scrapeMetrics, untilMetric } from './harness/metrics';
import {
  Position,
  ResumeMeta,
  dropConnection,
  helloMeta,
  optIn,
  optInProtocols,
  positionOf,
  resumeOf,
  resumeProtocol,
  resumeProtocols,
} from './harness/resume';
import { Frame, HandshakeRefused, PROTOCOL, WsClient } from './harness/ws-client';
import { expectPut, expectPublish } from './harness/v1';
import { expectNothingMore } from './harness/barrier';

/** SPEC §12 on one node: resumable sessions, topic history and positions, presence that does not flap. */
describe('resumable sessions (SPEC §12, one node)', () => {
  let t: TestGateway;
  afterEach(() => t.close());

  async function start(env: Record<string, string> = {}): Promise<void> {
    t = await startTestGateway(env);
  }

  /** Resume with `token` (query `user=<user>-resume`, so a fallback's authorization can be told apart). */
  async function resume(
    user: string,
    token: string,
    positions: Record<string, Position> = {},
  ): Promise<{ client: WsClient; hello: Frame }> {
    return t.hello({ query: `user=${user}-resume`, protocols: resumeProtocols(token, positions) });
  }

  function authRequests(): number {
    return t.upstream.requests.filter((r) => r.path.endsWith('/gateway/authorize_connection')).length;
  }

  async function untilDetached(count: number): Promise<void> {
    await untilMetric(t.apiUrl, 'gateway_sessions_detached', (v) => v === count);
  }

  describe('opting in (12.1)', () => {
    it('a legacy client gets hello meta {} and message meta {"topic"} byte for byte', async () => {
      await start();
      const { client, cid } = await t.helloAs('ann');
      const raw: string[] = [];
      client.socket.on('message', (data: Buffer) => raw.push(data.toString('utf8')));
      await expectPut(t.apiUrl, `/v1/connection/${cid}/subscriptions/a/b`);
      await expectPublish(t.apiUrl, 'a/b', { n: 1 });
      await client.next();
      expect(raw).toEqual(['["message",{"topic":"a.b"},{"n":1}]']);
      expect(client.frames[0]).toEqual(['hello', {}, { user_id: 'ann' }]);
    });

    it('an opted-in client gets a resume token and the window, and the lattice protocol is echoed alone', async () => {
      await start({ RESUME_WINDOW: '45s' });
      const { client, resume, hello } = await optIn(t, 'ann');
      expect(client.protocol).toBe(PROTOCOL);
      expect(helloMeta(hello)).toEqual({ resume: { token: resume.token, window: 45 } });
      expect(resume.token).toMatch(/^[A-Za-z0-9_-]{22,}$/);
      expect(hello[2]).toEqual({ user_id: 'ann' });
    });

    it('RESUME_WINDOW=0 ignores the opt-in: meta {} and legacy message frames', async () => {
      await start({ RESUME_WINDOW: '0s' });
      const { client, hello } = await t.hello({ query: 'user=ann', protocols: optInProtocols() });
      expect(hello).toEqual(['hello', {}, { user_id: 'ann' }]);
      const cid = await t.connectionIdOf('user=ann');
      await expectPut(t.apiUrl, `/v1/connection/${cid}/subscriptions/t1`);
      await expectPublish(t.apiUrl, 't1', 1);
      expect(await client.next()).toEqual(['message', { topic: 't1' }, 1]);
    });

    it('message frames of a resumable connection carry offset and epoch, 1, 2, 3 per topic', async () => {
      await start();
      const { client, cid } = await optIn(t, 'ann');
      const legacy = await t.helloAs('bob');
      await expectPut(t.apiUrl, `/v1/connection/${cid}/subscriptions/t1`);
      await expectPut(t.apiUrl, `/v1/connection/${legacy.cid}/subscriptions/t1`);
      for (const n of [1, 2, 3]) await expectPublish(t.apiUrl, 't1', { n });
      const frames = [await client.next(), await client.next(), await client.next()];
      const epoch = frames[0][1].epoch as string;
      expect(epoch).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
      expect(frames).toEqual([1, 2, 3].map((n) => ['message', { topic: 't1', offset: n, epoch }, { n }]));
      expect([await legacy.client.next(), await legacy.client.next(), await legacy.client.next()]).toEqual(
        [1, 2, 3].map((n) => ['message', { topic: 't1' }, { n }]),
      );
    });
  });

  describe('resuming (12.2, 12.3)', () => {
    it('resumes a dropped session: same connection id, no authorization, missed messages, snapshots, then live', async () => {
      await start();
      const { client, resume: first, cid } = await optIn(t, 'ann');
      await expectPut(t.apiUrl, `/v1/connection/${cid}/subscriptions/t1`);
      await expectPut(t.apiUrl, `/v1/connection/${cid}/lattices/ns`, {
        shared: { k: { a_counter: 1 } },
        private: { ann: { k: {} } },
      });
      await expectPut(t.apiUrl, `/v1/connection/${cid}/users`, ['ann']);
      await client.next(); // lattice snapshot
      await client.next(); // users snapshot
      await expectPublish(t.apiUrl, 't1', 'seen');
      const seen = positionOf(await client.next(), 't1');
      await dropConnection(client);
      await untilDetached(1);
      await expectPublish(t.apiUrl, 't1', 'missed-1');
      await expectPublish(t.apiUrl, 't1', 'missed-2');
      const auths = authRequests();

      const { client: again, hello } = await resume('ann', first.token, { t1: seen });
      expect(authRequests()).toBe(auths);
      const meta = helloMeta(hello);
      expect(meta).toEqual({ resume: { token: expect.any(String), window: 30 }, resumed: true, lost: [] });
      expect((meta.resume as ResumeMeta).token).not.toBe(first.token);
      expect(hello[2]).toEqual({ user_id: 'ann' });
      const epoch = seen[1];
      expect(await again.next()).toEqual(['message', { topic: 't1', offset: 2, epoch }, 'missed-1']);
      expect(await again.next()).toEqual(['message', { topic: 't1', offset: 3, epoch }, 'missed-2']);
      expect(await again.next()).toEqual(['lattice', { namespace: 'ns' }, { k: { a_counter: 1 } }]);
      const users = await again.next();
      expect(users[0]).toBe('lattice');
      expect(users[1]).toEqual({ namespace: 'gateway.user' });
      expect((users[2] as Record<string, { status_register: [number, string] }>).ann.status_register[1]).toBe('active');
      await expectPublish(t.apiUrl, 't1', 'live');
      expect(await again.next()).toEqual(['message', { topic: 't1', offset: 4, epoch }, 'live']);
      // The same connection id: a /v1 command for it reaches the resumed socket.
      await expectPut(t.apiUrl, `/v1/connection/${cid}/subscriptions/t2`);
      await expectPublish(t.apiUrl, 't2', 'by-cid');
      expect(await again.next()).toEqual(['message', { topic: 't2', offset: 1, epoch: expect.any(String) }, 'by-cid']);
      await expectNothingMore(again);
      await untilDetached(0);
    });

    it('a topic without a position replays everything published after the session subscribed to it', async () => {
      await start();
      const bob = await optIn(t, 'bob');
      await expectPut(t.apiUrl, `/v1/connection/${bob.cid}/subscriptions/t1`);
      await expectPublish(t.apiUrl, 't1', 'before'); // offset 1, before ann's subscription
      const { client, resume: first, cid } = await optIn(t, 'ann');
      await expectPut(t.apiUrl, `/v1/connection/${cid}/subscriptions/t1`);
      await dropConnection(client);
      await untilDetached(1);
      await expectPublish(t.apiUrl, 't1', 'after'); // offset 2
      const { client: again, hello } = await resume('ann', first.token);
      expect(helloMeta(hello)).toMatchObject({ resumed: true, lost: [] });
      expect(await again.next()).toEqual(['message', { topic: 't1', offset: 2, epoch: expect.any(String) }, 'after']);
      await expectNothingMore(again);
    });

    it('a low offered position on a topic the session subscribed to late replays only what came after its subscription', async () => {
      await start();
      const bob = await optIn(t, 'bob');
      await expectPut(t.apiUrl, `/v1/connection/${bob.cid}/subscriptions/t1`);
      await expectPublish(t.apiUrl, 't1', 'before-1');
      await expectPublish(t.apiUrl, 't1', 'before-2');
      const epoch = positionOf(await bob.client.next(), 't1')[1];
      const { client, resume: first, cid } = await optIn(t, 'ann');
      await expectPut(t.apiUrl, `/v1/connection/${cid}/subscriptions/t1`); // at offset 2
      await dropConnection(client);
      await untilDetached(1);
      await expectPublish(t.apiUrl, 't1', 'after'); // offset 3
      let token = first.token;
      for (const offered of [0, 1]) {
        const { client: again, hello } = await resume('ann', token, { t1: [offered, epoch] });
        expect(helloMeta(hello)).toMatchObject({ resumed: true, lost: [] });
        expect(await again.next()).toEqual(['message', { topic: 't1', offset: 3, epoch }, 'after']);
        await expectNothingMore(again);
        token = resumeOf(hello).token;
        await dropConnection(again);
        await untilDetached(1);
      }
    });

    it('a re-subscription after the backend unsubscribed the session: a low offer replays only what came after the latest subscription', async () => {
      await start();
      const bob = await optIn(t, 'bob'); // keeps t1's history going while ann is unsubscribed
      await expectPut(t.apiUrl, `/v1/connection/${bob.cid}/subscriptions/t1`);
      const { client, resume: first, cid } = await optIn(t, 'ann');
      await expectPut(t.apiUrl, `/v1/connection/${cid}/subscriptions/t1`);
      await expectPublish(t.apiUrl, 't1', 'seen'); // offset 1
      const seen = positionOf(await client.next(), 't1');
      await api(t.apiUrl, 'DELETE', `/v1/connection/${cid}/subscriptions/t1`);
      await expectPublish(t.apiUrl, 't1', 'unsubscribed-1');
      await expectPublish(t.apiUrl, 't1', 'unsubscribed-2');
      await expectPut(t.apiUrl, `/v1/connection/${cid}/subscriptions/t1`); // again, at offset 3
      await dropConnection(client);
      await untilDetached(1);
      await expectPublish(t.apiUrl, 't1', 'after'); // offset 4
      const { client: again, hello } = await resume('ann', first.token, { t1: seen });
      expect(helloMeta(hello)).toMatchObject({ resumed: true, lost: [] });
      expect(await again.next()).toEqual(['message', { topic: 't1', offset: 4, epoch: seen[1] }, 'after']);
      await expectNothingMore(again);
    });

    it('an offer with "count_replayed": true gets "replayed": N, the number of missed messages that follow before live traffic', async () => {
      await start();
      const { client, resume: first, cid } = await optIn(t, 'ann');
      await expectPut(t.apiUrl, `/v1/connection/${cid}/subscriptions/t1`);
      await expectPut(t.apiUrl, `/v1/connection/${cid}/subscriptions/t2`);
      await expectPublish(t.apiUrl, 't1', 'seen');
      const seen = positionOf(await client.next(), 't1');
      await dropConnection(client);
      await untilDetached(1);
      for (const n of [1, 2]) await expectPublish(t.apiUrl, 't1', `missed-${n}`);
      await expectPublish(t.apiUrl, 't2', 'missed-3');

      const asked = await t.hello({
        query: 'user=ann-resume',
        protocols: [PROTOCOL, resumeProtocol({ token: first.token, positions: { t1: seen }, count_replayed: true })],
      });
      expect(helloMeta(asked.hello)).toEqual({
        resume: { token: expect.any(String), window: 30 },
        resumed: true,
        lost: [],
        replayed: 3,
      });
      const replay = [await asked.client.next(), await asked.client.next(), await asked.client.next()];
      expect(replay.map((frame) => frame[2]).sort()).toEqual(['missed-1', 'missed-2', 'missed-3']);
      await expectNothingMore(asked.client);

      // Without the key the resumed hello is exactly SPEC §12.3's, nothing replayed or not.
      const next = resumeOf(asked.hello);
      await dropConnection(asked.client);
      await untilDetached(1);
      const { hello } = await resume('ann', next.token, {
        t1: positionOf(replay[1], 't1'),
        t2: positionOf(replay[2], 't2'),
      });
      expect(helloMeta(hello)).toEqual({ resume: { token: expect.any(String), window: 30 }, resumed: true, lost: [] });
    });

    it('a failed resume never says "replayed", and a resume with nothing missed says 0', async () => {
      await start();
      const { client, resume: first } = await optIn(t, 'ann');
      await dropConnection(client);
      await untilDetached(1);
      const counted = (token: string): string[] => [
        PROTOCOL,
        resumeProtocol({ token, positions: {}, count_replayed: true }),
      ];
      const resumed = await t.hello({ query: 'user=ann-resume', protocols: counted(first.token) });
      expect(helloMeta(resumed.hello)).toMatchObject({ resumed: true, lost: [], replayed: 0 });
      const failed = await t.hello({ query: 'user=ann-again', protocols: counted(first.token) });
      expect(helloMeta(failed.hello)).toEqual({ resume: { token: expect.any(String), window: 30 }, resumed: false });
    });

    it('/v1 commands apply to a detached session and take effect on resume', async () => {
      await start();
      const { client, resume: first, cid } = await optIn(t, 'ann');
      await dropConnection(client);
      await untilDetached(1);
      await expectPut(t.apiUrl, `/v1/connection/${cid}/subscriptions/news`);
      await expectPut(t.apiUrl, `/v1/connection/${cid}/lattices/ns`, { private: { ann: { k: { x_counter: 7 } } } });
      await expectPut(t.apiUrl, `/v1/connection/${cid}/users`, ['zed']);
      await expectPublish(t.apiUrl, 'news', 'while-away');
      const { client: again } = await resume('ann', first.token);
      expect(await again.next()).toEqual([
        'message',
        { topic: 'news', offset: 1, epoch: expect.any(String) },
        'while-away',
      ]);
      expect(await again.next()).toEqual(['lattice', { namespace: 'ns' }, { k: { x_counter: 7 } }]);
      expect(await again.next()).toEqual([
        'lattice',
        { namespace: 'gateway.user' },
        { zed: { status_register: [0, 'offline'] } },
      ]);
      await expectNothingMore(again);
    });

    it('tokens are single use: the old token falls back to a normal connect with resumed: false', async () => {
      await start();
      const { client, resume: first } = await optIn(t, 'ann');
      await dropConnection(client);
      await untilDetached(1);
      const { client: again } = await resume('ann', first.token);
      const { hello } = await resume('ann', first.token);
      const meta = helloMeta(hello);
      expect(meta).toEqual({ resume: { token: expect.any(String), window: 30 }, resumed: false });
      expect(hello[2]).toEqual({ user_id: 'ann-resume' }); // a new authorization, with the new handshake's query string
      // The resumed connection was not disturbed by the failed attempt.
      await expectNothingMore(again);
    });

    it('resuming a still-attached (half-open) session closes the old socket with 4409 session_resumed', async () => {
      await start();
      const { client, resume: first, cid } = await optIn(t, 'ann');
      await expectPut(t.apiUrl, `/v1/connection/${cid}/subscriptions/t1`);
      const { client: again, hello } = await resume('ann', first.token);
      expect(helloMeta(hello)).toMatchObject({ resumed: true, lost: [] });
      expect(await client.closed()).toEqual({ code: 4409, reason: 'session_resumed' });
      await expectPublish(t.apiUrl, 't1', 'after');
      expect(await again.next()).toEqual(['message', { topic: 't1', offset: 1, epoch: expect.any(String) }, 'after']);
      await expectNothingMore(again);
      expect(await t.openConnections()).toBe(1);
    });

    it('resumes many times in a row, each time with the latest token, the first right after hello', async () => {
      await start();
      let { client, resume: current, cid } = await optIn(t, 'ann');
      await expectPut(t.apiUrl, `/v1/connection/${cid}/subscriptions/t1`);
      let position: Position | null = null;
      for (let round = 1; round <= 4; round++) {
        if (round > 1) await dropConnection(client);
        const resumed = await resume('ann', current.token, position === null ? {} : { t1: position });
        expect(helloMeta(resumed.hello)).toMatchObject({ resumed: true, lost: [] });
        client = resumed.client;
        current = resumeOf(resumed.hello);
        await expectPublish(t.apiUrl, 't1', round);
        position = positionOf(await client.next(), 't1');
        expect(position[0]).toBe(round);
      }
      await expectNothingMore(client);
    });

    it.each([1000, 1001])(
      'a client close %i ends the session at once: offline at the deadline, never inactive; the token is void',
      async (code) => {
        await start({ NEW_CONNECTION_IDLE_TIMEOUT: '300ms' });
        const watcher = await t.helloAs('wat');
        await expectPut(t.apiUrl, `/v1/connection/${watcher.cid}/users`, ['ann']);
        await watcher.client.next();
        const { client, resume: first } = await optIn(t, 'ann');
        expect((await watcher.client.next())[2]).toEqual({ ann: { status_register: [expect.any(Number), 'active'] } });
        client.socket.close(code);
        await client.closed();
        // Ended, so not counted as a connection: the deadline makes it offline (a detached one would be inactive).
        expect((await watcher.client.next())[2]).toEqual({ ann: { status_register: [expect.any(Number), 'offline'] } });
        await untilDetached(0);
        const { hello } = await resume('ann', first.token);
        expect(helloMeta(hello)).toMatchObject({ resumed: false });
      },
    );

    it('a client close frame with another code detaches the session', async () => {
      await start();
      const { client, resume: first } = await optIn(t, 'ann');
      client.socket.close(4000);
      await client.closed();
      await untilDetached(1);
      const { hello } = await resume('ann', first.token);
      expect(helloMeta(hello)).toMatchObject({ resumed: true });
    });
  });

  describe('ends of a socket (12.2, 12.5, 12.6)', () => {
    it('a ping timeout detaches the session', async () => {
      await start({ PING_INTERVAL: '100ms' });
      const { client, hello } = await t.hello({ query: 'user=ann', protocols: optInProtocols(), autoPong: false });
      await untilDetached(1);
      expect(client.socket.readyState).not.toBe(client.socket.CONNECTING);
      client.socket.terminate();
      const { hello: again } = await resume('ann', resumeOf(hello).token);
      expect(helloMeta(again)).toMatchObject({ resumed: true });
    });

    it('a slow-consumer close detaches the session; the resume reports what the history lost', async () => {
      await start({ CLIENT_QUEUE_MAX_BYTES: '64KiB', TOPIC_HISTORY_SIZE: '5' });
      const { client, resume: first, cid } = await optIn(t, 'ann');
      await expectPut(t.apiUrl, `/v1/connection/${cid}/subscriptions/flood`);
      (client.socket as unknown as { _socket: Socket })._socket.pause();
      const pad = 'x'.repeat(100 * 1024);
      for (let seq = 0; (await scrapeMetrics(t.apiUrl)).value('gateway_slow_consumer_closes_total') === 0;) {
        if (seq > 800) throw new Error('no slow-consumer close after 800 messages of 100 KiB');
        for (const end = seq + 20; seq < end; seq += 1) await expectPublish(t.apiUrl, 'flood', { seq, pad });
      }
      client.socket.terminate();
      await untilDetached(1);
      const { client: again, hello } = await resume('ann', first.token);
      expect(helloMeta(hello)).toMatchObject({ resumed: true, lost: ['flood'] });
      await expectNothingMore(again);
    });

    it('a drain closes resumable sessions with 1012 service_restart and legacy ones with 1001', async () => {
      await start();
      const { client } = await optIn(t, 'ann');
      const legacy = await t.helloAs('bob');
      const closing = t.gateway.close();
      expect(await client.closed()).toEqual({ code: 1012, reason: 'service_restart' });
      expect(await legacy.client.closed()).toEqual({ code: 1001, reason: 'shutdown' });
      await closing;
      await t.upstream.close();
      await start(); // afterEach closes this one
    });

    it('DELETE /v1/connection of a detached session ends it: it cannot be resumed', async () => {
      await start();
      const { client, resume: first, cid } = await optIn(t, 'ann');
      await dropConnection(client);
      await untilDetached(1);
      expect((await api(t.apiUrl, 'DELETE', `/v1/connection/${cid}`)).status).toBe(204);
      await untilDetached(0);
      const { hello } = await resume('ann', first.token);
      expect(helloMeta(hello)).toMatchObject({ resumed: false });
      expect((await scrapeMetrics(t.apiUrl)).value('gateway_resumes_total{result="expired"}')).toBe(1);
    });

    it('DELETE /v1/user/…/connections closes a live resumable session with 4403: not detached, not resumable', async () => {
      await start();
      const { client, resume: first } = await optIn(t, 'ann');
      expect((await api(t.apiUrl, 'DELETE', '/v1/user/ann/connections')).status).toBe(204);
      expect(await client.closed()).toEqual({ code: 4403, reason: 'disconnected' });
      await untilDetached(0);
      const { hello } = await resume('ann', first.token);
      expect(helloMeta(hello)).toMatchObject({ resumed: false });
    });
  });

  describe('presence (12.2)', () => {
    it('a detached session counts as a connection until its window ends: inactive at the deadline, offline after the window', async () => {
      await start({ NEW_CONNECTION_IDLE_TIMEOUT: '200ms', RESUME_WINDOW: '1200ms' });
      const watcher = await t.helloAs('wat');
      const { client } = await optIn(t, 'ann');
      await expectPut(t.apiUrl, `/v1/connection/${watcher.cid}/users`, ['ann']);
      expect((await watcher.client.next())[2]).toEqual({ ann: { status_register: [expect.any(Number), 'active'] } });
      const droppedAt = Date.now();
      await dropConnection(client);
      await untilDetached(1);
      expect((await watcher.client.next())[2]).toEqual({ ann: { status_register: [expect.any(Number), 'inactive'] } });
      expect((await watcher.client.next(3000))[2]).toEqual({
        ann: { status_register: [expect.any(Number), 'offline'] },
      });
      expect(Date.now() - droppedAt).toBeGreaterThanOrEqual(1100);
      await untilDetached(0);
    });

    it('the inactivity notice fires as usual while detached, and the session is inactive, not offline', async () => {
      await start({ NEW_CONNECTION_IDLE_TIMEOUT: '300ms' });
      const watcher = await t.helloAs('wat');
      const { client } = await optIn(t, 'ann');
      await expectPut(t.apiUrl, `/v1/connection/${watcher.cid}/users`, ['ann']);
      await watcher.client.next();
      await dropConnection(client);
      await t.upstream.nextRequest((r) => r.path.endsWith('/gateway/session_inactive'), 3000);
      expect((await watcher.client.next())[2]).toEqual({ ann: { status_register: [expect.any(Number), 'inactive'] } });
    });
  });

  describe('history limits and lost topics (12.3, 12.4)', () => {
    it('a topic whose missed messages the history no longer holds is lost and replays nothing', async () => {
      await start({ TOPIC_HISTORY_SIZE: '3' });
      const { client, resume: first, cid } = await optIn(t, 'ann');
      await expectPut(t.apiUrl, `/v1/connection/${cid}/subscriptions/t1`);
      await expectPut(t.apiUrl, `/v1/connection/${cid}/subscriptions/t2`);
      await expectPublish(t.apiUrl, 't1', 0);
      const seen = positionOf(await client.next(), 't1');
      await dropConnection(client);
      await untilDetached(1);
      for (let n = 1; n <= 5; n++) await expectPublish(t.apiUrl, 't1', n); // offsets 2..6; the history keeps 4..6
      await expectPublish(t.apiUrl, 't2', 'kept');
      const { client: again, hello } = await resume('ann', first.token, { t1: seen });
      expect(helloMeta(hello)).toMatchObject({ resumed: true, lost: ['t1'] });
      expect(await again.next()).toEqual(['message', { topic: 't2', offset: 1, epoch: expect.any(String) }, 'kept']);
      await expectNothingMore(again);
      await expectPublish(t.apiUrl, 't1', 'live');
      expect(await again.next()).toEqual(['message', { topic: 't1', offset: 7, epoch: seen[1] }, 'live']);
      const metrics = await scrapeMetrics(t.apiUrl);
      expect(metrics.value('gateway_lost_topics_total')).toBe(1);
      expect(metrics.value('gateway_replayed_messages_total')).toBe(1);
    });

    it('TOPIC_HISTORY_MAX_BYTES: missed payloads up to the bound replay; one byte over it and the topic is lost', async () => {
      await start({ TOPIC_HISTORY_MAX_BYTES: '1000' });
      const { client, resume: first, cid } = await optIn(t, 'ann');
      await expectPut(t.apiUrl, `/v1/connection/${cid}/subscriptions/t1`);
      await dropConnection(client);
      await untilDetached(1);
      const half = 'x'.repeat(498); // 500 bytes of JSON
      await expectPublish(t.apiUrl, 't1', half);
      await expectPublish(t.apiUrl, 't1', half); // 1000 bytes: at the bound
      const { client: again, hello } = await resume('ann', first.token);
      expect(helloMeta(hello)).toMatchObject({ resumed: true, lost: [] });
      expect((await again.next())[2]).toBe(half);
      const seen = positionOf(await again.next(), 't1');
      await expectNothingMore(again);

      await dropConnection(again);
      await untilDetached(1);
      await expectPublish(t.apiUrl, 't1', half);
      await expectPublish(t.apiUrl, 't1', half);
      await expectPublish(t.apiUrl, 't1', 1); // 1001 bytes missed: the oldest of them was dropped
      const { client: last, hello: lastHello } = await resume('ann', resumeOf(hello).token, { t1: seen });
      expect(helloMeta(lastHello)).toMatchObject({ resumed: true, lost: ['t1'] });
      await expectNothingMore(last);
    });

    it('HISTORY_MEMORY_MAX_BYTES: over it the oldest messages of the largest history go; a resume that missed them reports that topic lost', async () => {
      await start({ HISTORY_MEMORY_MAX_BYTES: '2KiB' });
      const { client, resume: first, cid } = await optIn(t, 'ann');
      await expectPut(t.apiUrl, `/v1/connection/${cid}/subscriptions/big`);
      await expectPut(t.apiUrl, `/v1/connection/${cid}/subscriptions/small`);
      await dropConnection(client);
      await untilDetached(1);
      await expectPublish(t.apiUrl, 'small', 'kept');
      // Frames of ~560 bytes: the fourth takes the history over 2 KiB.
      for (let n = 1; n <= 4; n++) await expectPublish(t.apiUrl, 'big', 'x'.repeat(498));
      const { client: again, hello } = await resume('ann', first.token);
      expect(helloMeta(hello)).toMatchObject({ resumed: true, lost: ['big'] });
      expect(await again.next()).toEqual(['message', { topic: 'small', offset: 1, epoch: expect.any(String) }, 'kept']);
      await expectNothingMore(again);
      expect((await scrapeMetrics(t.apiUrl)).value('gateway_topic_history_messages')).toBe(4);
    });

    it('a position of another epoch is lost', async () => {
      await start();
      const { client, resume: first, cid } = await optIn(t, 'ann');
      await expectPut(t.apiUrl, `/v1/connection/${cid}/subscriptions/t1`);
      await dropConnection(client);
      await untilDetached(1);
      await expectPublish(t.apiUrl, 't1', 1);
      const { client: again, hello } = await resume('ann', first.token, { t1: [0, 'another-epoch'] });
      expect(helloMeta(hello)).toMatchObject({ resumed: true, lost: ['t1'] });
      await expectNothingMore(again);
    });

    it('TOPIC_HISTORY_SIZE=0 replays nothing; topics with missed messages are lost, the others not', async () => {
      await start({ TOPIC_HISTORY_SIZE: '0' });
      const { client, resume: first, cid } = await optIn(t, 'ann');
      await expectPut(t.apiUrl, `/v1/connection/${cid}/subscriptions/t1`);
      await expectPut(t.apiUrl, `/v1/connection/${cid}/subscriptions/quiet`);
      await dropConnection(client);
      await untilDetached(1);
      await expectPublish(t.apiUrl, 't1', 1);
      const { client: again, hello } = await resume('ann', first.token);
      expect(helloMeta(hello)).toMatchObject({ resumed: true, lost: ['t1'] });
      await expectNothingMore(again);
      await expectPublish(t.apiUrl, 't1', 2);
      expect(await again.next()).toEqual(['message', { topic: 't1', offset: 2, epoch: expect.any(String) }, 2]);
    });

    it('the history of a topic is dropped TOPIC_HISTORY_TTL after its last publish', async () => {
      await start({ RESUME_WINDOW: '100ms', TOPIC_HISTORY_TTL: '200ms' });
      const { cid } = await optIn(t, 'ann');
      await expectPut(t.apiUrl, `/v1/connection/${cid}/subscriptions/t1`);
      await expectPublish(t.apiUrl, 't1', 1);
      await untilMetric(t.apiUrl, 'gateway_topic_history_messages', (v) => v === 1);
      await untilMetric(t.apiUrl, 'gateway_topic_history_messages', (v) => v === 0, 3000);
    });
  });

  describe('fallbacks: a failed resume is one normal connect (12.3)', () => {
    const cases: Array<[string, (token: string) => string]> = [
      ['a forged token', () => resumeProtocol({ token: 'A'.repeat(32), positions: {} })],
      ['a token that is not a string', () => resumeProtocol({ token: 42, positions: {} })],
      ['positions that are not an object', (token) => resumeProtocol({ token, positions: [1] })],
      ['a position with a bad offset', (token) => resumeProtocol({ token, positions: { t1: [-1, 'e'] } })],
      ['a topic name that is not one', (token) => resumeProtocol({ token, positions: { 'a..b': [1, 'e'] } })],
      ['not base64url', () => 'gateway-resume.!!!'],
      ['base64url of something not JSON', () => 'gateway-resume.' + Buffer.from('{nope').toString('base64url')],
      ['a JSON array', () => resumeProtocol([1, 2])],
      ['an offer over 8 KiB', (token) => resumeProtocol({ token, positions: { pad: [1, 'x'.repeat(8200)] } })],
    ];

    it.each(cases)(
      '%s: a new connection with resumed: false, counted as invalid; a valid token stays valid',
      async (_, offer) => {
        await start();
        const { client, resume: first } = await optIn(t, 'ann');
        await dropConnection(client);
        await untilDetached(1);
        const auths = authRequests();
        const { hello } = await t.hello({ query: 'user=eve', protocols: [PROTOCOL, offer(first.token)] });
        expect(authRequests()).toBe(auths + 1);
        expect(helloMeta(hello)).toEqual({ resume: { token: expect.any(String), window: 30 }, resumed: false });
        expect(hello[2]).toEqual({ user_id: 'eve' });
        expect((await scrapeMetrics(t.apiUrl)).value('gateway_resumes_total{result="invalid"}')).toBe(1);
        const { hello: resumed } = await resume('ann', first.token);
        expect(helloMeta(resumed)).toMatchObject({ resumed: true });
      },
    );

    it('an expired token falls back and is counted as expired; nothing of the old session leaks', async () => {
      await start({ RESUME_WINDOW: '200ms' });
      const { client, resume: first, cid } = await optIn(t, 'ann');
      await expectPut(t.apiUrl, `/v1/connection/${cid}/subscriptions/t1`);
      await dropConnection(client);
      await untilDetached(1);
      await untilDetached(0);
      await expectPublish(t.apiUrl, 't1', 'nobody');
      const { client: again, hello } = await resume('ann', first.token);
      expect(helloMeta(hello)).toMatchObject({ resumed: false });
      expect((await scrapeMetrics(t.apiUrl)).value('gateway_resumes_total{result="expired"}')).toBe(1);
      await expectNothingMore(again);
    });

    it('counts a successful resume, and never logs a token', async () => {
      await start();
      const { client, resume: first } = await optIn(t, 'ann');
      await dropConnection(client);
      await untilDetached(1);
      const { hello } = await resume('ann', first.token);
      const second = resumeOf(hello);
      expect((await scrapeMetrics(t.apiUrl)).value('gateway_resumes_total{result="resumed"}')).toBe(1);
      const logs = t.logs.join('\n');
      expect(logs).not.toContain(first.token);
      expect(logs).not.toContain(second.token);
    });
  });

  describe('limits (12.2)', () => {
    it('detached sessions count toward MAX_CONNECTIONS', async () => {
      await start({ MAX_CONNECTIONS: '1' });
      const { client } = await optIn(t, 'ann');
      await dropConnection(client);
      await untilDetached(1);
      await expect(t.connect({ query: 'user=bob' })).rejects.toMatchObject({ status: 503 });
    });

    it('a session resumed in a loop: the 11th resume within 10 s gets HTTP 429 with Retry-After, before any upgrade or authorization', async () => {
      await start();
      const { client: firstClient, resume: first } = await optIn(t, 'ann');
      const other = await optIn(t, 'bob');
      let [client, token] = [firstClient, first.token];
      for (let round = 1; round <= 10; round++) {
        const resumed = await resume('ann', token);
        expect(helloMeta(resumed.hello)).toMatchObject({ resumed: true });
        [client, token] = [resumed.client, resumeOf(resumed.hello).token];
      }
      const auths = authRequests();
      const refused = await t.connect({ query: 'user=ann-resume', protocols: resumeProtocols(token) }).then(
        () => null,
        (err: HandshakeRefused) => err,
      );
      expect(refused).toBeInstanceOf(HandshakeRefused);
      expect(refused).toMatchObject({ status: 429, body: 'too many resumes of this session\n' });
      expect(Number(refused!.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(Number(refused!.headers['retry-after'])).toBeLessThanOrEqual(10);
      expect(authRequests()).toBe(auths);
      // The session's live socket was not disturbed; another session resumes as usual.
      await expectNothingMore(client);
      expect(helloMeta((await resume('bob', other.resume.token)).hello)).toMatchObject({ resumed: true });
    });

    it('forged tokens naming a session do not use up its resumes: only resumes that succeeded count', async () => {
      await start();
      const { resume: first, cid } = await optIn(t, 'ann');
      // A token of the right form for ann's session (random part wrong): a normal connect, 12 times over.
      const forged = 'A'.repeat(32) + cid;
      for (let round = 1; round <= 12; round++) {
        const attempt = await resume(`mallory${round}`, forged);
        expect(helloMeta(attempt.hello)).toMatchObject({ resumed: false });
        await attempt.client.close();
      }
      expect(helloMeta((await resume('ann', first.token)).hello)).toMatchObject({ resumed: true });
    });

    it('a user dropping sessions in a loop cannot fill MAX_CONNECTIONS: one detached session more than RESUME_MAX_DETACHED_PER_USER ends its oldest', async () => {
      await start({ MAX_CONNECTIONS: '4', RESUME_MAX_DETACHED_PER_USER: '2' });
      const tokens: string[] = [];
      for (let round = 1; round <= 8; round++) {
        const { client, resume } = await optIn(t, 'mal');
        tokens.push(resume.token);
        await dropConnection(client);
        // No socket left: the drop was handled (and the oldest ended in the same step).
        await untilMetric(t.apiUrl, 'gateway_connections', (v) => v === 0);
        await untilDetached(Math.min(round, 2));
      }
      // Others still connect (two detached sessions of mal, two sockets free).
      const bob = await t.helloAs('bob');
      const carol = await t.helloAs('carol');
      await expectNothingMore(bob.client);
      await expectNothingMore(carol.client);
      carol.client.socket.close(1000);
      await carol.client.closed();
      // The oldest sessions ended as a window end ends them (expired); the last two are still there.
      const { client: fallback, hello: ended } = await resume('mal', tokens[5]);
      expect(helloMeta(ended)).toMatchObject({ resumed: false });
      fallback.socket.close(1000); // the client's goodbye: ended, not detached
      await fallback.closed();
      expect((await scrapeMetrics(t.apiUrl)).value('gateway_resumes_total{result="expired"}')).toBe(1);
      const { hello: kept } = await resume('mal', tokens[7]);
      expect(helloMeta(kept)).toMatchObject({ resumed: true });
    });
  });
});
