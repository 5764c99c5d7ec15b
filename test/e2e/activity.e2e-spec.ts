import { TestGateway, startTestGateway } from './harness/gateway';
import { identityHeader } from './harness/identity';
import { api } from './harness/http';
import { RecordedRequest } from './harness/fake-upstream';
import { Frame, WsClient } from './harness/ws-client';

const INACTIVE_PATH = '/gateway/session_inactive';
const SHORT_WINDOWS = { NEW_CONNECTION_IDLE_TIMEOUT: '1s', CLIENT_MIN_IDLE_TIMEOUT: '1s' };

/** SPEC §8: sessions, activity deadlines and the inactivity notice. */
describe('sessions and inactivity', () => {
  let t: TestGateway;
  afterEach(() => t.close());

  const connect = (user: string, query?: string): Promise<{ client: WsClient; cid: string }> => t.helloAs(user, query);

  /** The next session_inactive request that speaks for `user` (default auth answer `{user_id}`), within `ms`. */
  function inactiveNoticeOf(user: string, ms: number): Promise<RecordedRequest> {
    const authorization = identityHeader(JSON.stringify({ user_id: user }));
    return t.upstream.nextRequest((r) => r.path === INACTIVE_PATH && r.headers.authorization === authorization, ms);
  }

  /** Subscribe `watcher` to the users lattice for `users` and return the snapshot's statuses. */
  async function watch(watcher: { client: WsClient; cid: string }, users: string[]): Promise<Record<string, string>> {
    expect((await api(t.apiUrl, 'PUT', `/v1/connection/${watcher.cid}/users`, users)).status).toBe(204);
    return statusOf(await watcher.client.next());
  }

  /** user → status of a `gateway.user` frame. */
  function statusOf(frame: Frame): Record<string, string> {
    expect(frame.slice(0, 2)).toEqual(['lattice', { namespace: 'gateway.user' }]);
    const data = frame[2] as Record<string, { status_register: [number, string] }>;
    return Object.fromEntries(Object.entries(data).map(([user, { status_register }]) => [user, status_register[1]]));
  }

  describe('with 1 s windows', () => {
    beforeEach(async () => (t = await startTestGateway(SHORT_WINDOWS)));

    it("sends session_inactive about 1 s after the first auth, with an empty body and the user's identity", async () => {
      const authResponse = { user_id: 'alice', roles: ['admin'], name: 'Alice' };
      t.upstream.on('POST /gateway/authorize_connection', { json: authResponse });
      const connectAt = Date.now();
      await t.hello({ query: 'user=alice' });
      const helloAt = Date.now();

      const notice = await t.upstream.requestTo(INACTIVE_PATH, 2500);
      const arrivedAt = Date.now();
      expect(arrivedAt - helloAt).toBeGreaterThanOrEqual(800);
      expect(arrivedAt - connectAt).toBeLessThanOrEqual(2500);
      expect(notice.method).toBe('POST');
      expect(notice.body).toEqual([{}, [], {}]);
      expect(notice.rawBody.replace(/\s/g, '')).toBe('[{},[],{}]');
      expect(notice.headers.authorization).toBe(identityHeader(JSON.stringify(authResponse)));
      expect(notice.headers['content-type']).toMatch(/^application\/json/);
    });

    it("extends the deadline with a call's active: 2 (seconds)", async () => {
      const alice = await connect('alice');
      const callAt = Date.now();
      expect(await alice.client.call('chat.typing', { request_id: 1, active: 2 })).toEqual([
        'result',
        { request_id: 1, active: 2 },
        { args: [], kwargs: {} },
      ]);

      await inactiveNoticeOf('alice', 4000);
      const elapsed = Date.now() - callAt;
      expect(elapsed).toBeGreaterThanOrEqual(1800);
      expect(elapsed).toBeLessThanOrEqual(3500);
    });

    it('pushes active, inactive, then offline to a watcher', async () => {
      const bob = await connect('bob');
      expect(await watch(bob, ['alice'])).toEqual({ alice: 'offline' });

      const alice = await connect('alice');
      expect(statusOf(await bob.client.next())).toEqual({ alice: 'active' });

      const notice = inactiveNoticeOf('alice', 2500);
      expect(statusOf(await bob.client.next(2500))).toEqual({ alice: 'inactive' });
      await notice;

      await alice.client.close();
      expect(statusOf(await bob.client.next())).toEqual({ alice: 'offline' });
    });

    it('re-activates an inactive session on a second auth of the same user', async () => {
      const bob = await connect('bob');
      expect(await watch(bob, ['alice'])).toEqual({ alice: 'offline' });
      await connect('alice', 'user=alice&n=1');
      expect(statusOf(await bob.client.next())).toEqual({ alice: 'active' });
      expect(statusOf(await bob.client.next(2500))).toEqual({ alice: 'inactive' });
      await inactiveNoticeOf('alice', 1000);

      const second = await connect('alice', 'user=alice&n=2');
      expect(statusOf(await bob.client.next())).toEqual({ alice: 'active' });
      // The new window runs from the second auth: inactive again, with a second notice.
      expect(statusOf(await bob.client.next(2500))).toEqual({ alice: 'inactive' });
      await inactiveNoticeOf('alice', 1000);
      // The re-authorizing connection got no push of its own status (SPEC §3).
      expect(second.client.frames).toEqual([['hello', {}, { user_id: 'alice' }]]);
    });
  });

  describe('with SESSION_INACTIVE_NOTIFY=false', () => {
    beforeEach(async () => (t = await startTestGateway({ ...SHORT_WINDOWS, SESSION_INACTIVE_NOTIFY: 'false' })));

    it('goes inactive without calling the upstream', async () => {
      const bob = await connect('bob');
      expect(await watch(bob, ['alice'])).toEqual({ alice: 'offline' });
      await connect('alice');
      expect(statusOf(await bob.client.next())).toEqual({ alice: 'active' });
      expect(statusOf(await bob.client.next(2500))).toEqual({ alice: 'inactive' });

      // Barrier: an upstream call issued after the deadline has been answered...
      expect(await bob.client.call('test.barrier', { request_id: 'b' })).toEqual([
        'result',
        { request_id: 'b' },
        { args: [], kwargs: {} },
      ]);
      // ...and no notice came before it, for alice nor for bob (whose window ended first).
      expect(t.upstream.requests.filter((r) => r.path === INACTIVE_PATH)).toEqual([]);
    });
  });
});
