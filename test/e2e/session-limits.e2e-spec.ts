import { TestGateway, startTestGateway } from './harness/gateway';
import { RecordedRequest, Reply } from './harness/fake-upstream';
import { identityHeader } from './harness/identity';
import { untilMetric } from './harness/metrics';
import { Frame, WsClient } from './harness/ws-client';

const INACTIVE_PATH = '/gateway/session_inactive';
const TIMED_OUT_NOTICES = 'gateway_upstream_requests_total{destination="default",kind="inactive",outcome="timeout"}';

/** The default route's answer to a call without args or kwargs (SPEC §4.3, first row). */
function resultOf(meta: Record<string, unknown>): Frame {
  return ['result', meta, { args: [], kwargs: {} }];
}

/** SPEC §1 (CLIENT_MIN/MAX_IDLE_TIMEOUT, UPSTREAM_TIMEOUT), §4.1(3) and §8: limits on the activity deadline and the inactivity notice. */
describe('session limits', () => {
  let t: TestGateway;
  afterEach(() => t.close());

  /** Session_inactive requests that speak for `user` (default auth answer `{user_id}`). */
  function isNoticeOf(user: string): (r: RecordedRequest) => boolean {
    const authorization = identityHeader(JSON.stringify({ user_id: user }));
    return (r) => r.path === INACTIVE_PATH && r.headers.authorization === authorization;
  }

  /** The next session_inactive request for `user`, within `ms`. */
  function inactiveNoticeOf(user: string, ms: number): Promise<RecordedRequest> {
    return t.upstream.nextRequest(isNoticeOf(user), ms);
  }

  /** Every session_inactive request for `user` received so far. */
  function noticesOf(user: string): RecordedRequest[] {
    return t.upstream.requests.filter(isNoticeOf(user));
  }

  /**
   * Connect as `user` and send a call with `meta` before `hello` arrives: SPEC §3
   * processes it right after `hello`, so it lands within the new-connection
   * window however slow this machine is (a call sent after `hello` could come
   * after a 200 ms window has already ended). Resolves once its reply is checked,
   * with the time the call was sent (the deadline it sets runs from no earlier).
   */
  async function connectWithEarlyCall(
    user: string,
    meta: Record<string, unknown>,
  ): Promise<{ client: WsClient; sentAt: number }> {
    const client = await t.connect({ query: `user=${user}` });
    const sentAt = Date.now();
    client.send(['chat.typing', meta, [], {}]);
    expect(await client.next()).toEqual(['hello', {}, { user_id: user }]);
    expect(await client.next()).toEqual(resultOf(meta));
    return { client, sentAt };
  }

  describe('CLIENT_MAX_IDLE_TIMEOUT=1s (NEW_CONNECTION_IDLE_TIMEOUT=200ms, CLIENT_MIN_IDLE_TIMEOUT=100ms)', () => {
    beforeEach(
      async () =>
        (t = await startTestGateway({
          NEW_CONNECTION_IDLE_TIMEOUT: '200ms',
          CLIENT_MIN_IDLE_TIMEOUT: '100ms',
          CLIENT_MAX_IDLE_TIMEOUT: '1s',
        })),
    );

    it("clamps a call's active: 3600 to 1 s: the notice comes about 1 s after the call, not an hour later", async () => {
      const { sentAt } = await connectWithEarlyCall('alice', { request_id: 1, active: 3600 });

      await inactiveNoticeOf('alice', 2500);
      const elapsed = Date.now() - sentAt;
      // Not at the 200 ms new-connection deadline: the call extended it...
      expect(elapsed).toBeGreaterThanOrEqual(900);
      // ...but only to CLIENT_MAX_IDLE_TIMEOUT.
      expect(elapsed).toBeLessThanOrEqual(2500);
    });
  });

  describe('CLIENT_MIN_IDLE_TIMEOUT=1500ms (NEW_CONNECTION_IDLE_TIMEOUT=200ms)', () => {
    beforeEach(
      async () =>
        (t = await startTestGateway({ NEW_CONNECTION_IDLE_TIMEOUT: '200ms', CLIENT_MIN_IDLE_TIMEOUT: '1500ms' })),
    );

    it("raises a call's active: 0 to 1.5 s: the notice comes about 1.5 s after the call, not at 200 ms", async () => {
      const { sentAt } = await connectWithEarlyCall('alice', { request_id: 1, active: 0 });

      await inactiveNoticeOf('alice', 3000);
      const elapsed = Date.now() - sentAt;
      // Above the 200 ms window and the 1 s default minimum alike.
      expect(elapsed).toBeGreaterThanOrEqual(1400);
      expect(elapsed).toBeLessThanOrEqual(3000);
    });
  });

  describe('NEW_CONNECTION_IDLE_TIMEOUT=2s, CLIENT_MIN_IDLE_TIMEOUT=100ms', () => {
    beforeEach(
      async () => (t = await startTestGateway({ NEW_CONNECTION_IDLE_TIMEOUT: '2s', CLIENT_MIN_IDLE_TIMEOUT: '100ms' })),
    );

    /** Connect as alice, send one call per `active` value, check every reply; resolves the connect and hello times. */
    async function connectAndCallWith(actives: unknown[]): Promise<{ connectAt: number; helloAt: number }> {
      const connectAt = Date.now();
      const { client } = await t.helloAs('alice');
      const helloAt = Date.now();
      for (const [i, active] of actives.entries()) {
        // A call whose active is ignored is still a valid call: answered as usual, no validation_error.
        expect(await client.call('chat.typing', { request_id: i, active })).toEqual(
          resultOf({ request_id: i, active }),
        );
      }
      return { connectAt, helloAt };
    }

    it('ignores an active that is not a non-negative integer', async () => {
      // Honoured, "30", 4.5 or [30] would move the notice past 4 s; -1 or 1.5 could only bring it forward.
      const { connectAt, helloAt } = await connectAndCallWith([-1, '30', 1.5, 4.5, [30], true, null]);

      await inactiveNoticeOf('alice', 4000);
      const arrivedAt = Date.now();
      expect(arrivedAt - helloAt).toBeGreaterThanOrEqual(1800);
      expect(arrivedAt - connectAt).toBeLessThanOrEqual(3500);
    });

    it('never shortens the deadline with a smaller active: 1 or 0 (deadline = max(deadline, now + clamp(N)))', async () => {
      const { connectAt, helloAt } = await connectAndCallWith([1, 0]);

      await inactiveNoticeOf('alice', 4000);
      const arrivedAt = Date.now();
      // Replacing the deadline would have sent it about 1 s after hello.
      expect(arrivedAt - helloAt).toBeGreaterThanOrEqual(1800);
      expect(arrivedAt - connectAt).toBeLessThanOrEqual(3500);
    });
  });

  describe("the notice's response is ignored and never retried (NEW_CONNECTION_IDLE_TIMEOUT=1s)", () => {
    beforeEach(async () => (t = await startTestGateway({ NEW_CONNECTION_IDLE_TIMEOUT: '1s' })));

    it.each<[string, Reply]>([
      ['status 500', { status: 500, json: { error: 'boom' } }],
      ['a dropped connection', 'destroy'],
    ])(
      'sends exactly one notice when the upstream answers it with %s, and the session keeps working',
      async (_, reply) => {
        t.upstream.on('POST /gateway/session_inactive', reply);
        const alice = await t.helloAs('alice');
        await inactiveNoticeOf('alice', 2500);

        // Barrier: bob's own window of 1 s starts after alice's notice was answered.
        await t.helloAs('bob');
        expect(await alice.client.call('chat.message', { request_id: 1 })).toEqual(resultOf({ request_id: 1 }));
        await inactiveNoticeOf('bob', 2500);
        // About 1 s later, still one notice for alice: no retry.
        expect(noticesOf('alice')).toHaveLength(1);

        // The session still works: a call with active re-activates it, and its new deadline sends a fresh notice.
        expect(await alice.client.call('chat.typing', { request_id: 2, active: 1 })).toEqual(
          resultOf({ request_id: 2, active: 1 }),
        );
        await inactiveNoticeOf('alice', 2500);
        expect(noticesOf('alice')).toHaveLength(2);
      },
    );
  });

  describe('UPSTREAM_TIMEOUT=300ms applies to the notice (UPSTREAM_MAX_SOCKETS=1, NEW_CONNECTION_IDLE_TIMEOUT=200ms)', () => {
    beforeEach(
      async () =>
        (t = await startTestGateway({
          UPSTREAM_TIMEOUT: '300ms',
          UPSTREAM_MAX_SOCKETS: '1',
          NEW_CONNECTION_IDLE_TIMEOUT: '200ms',
        })),
    );

    it('gives a hung notice up after UPSTREAM_TIMEOUT and frees the only socket for a later call', async () => {
      t.upstream.on('POST /gateway/session_inactive', 'hang');
      const alice = await t.helloAs('alice');
      await inactiveNoticeOf('alice', 2000);
      const noticeAt = Date.now();

      // A call sent now would wait behind the hung notice and time out itself (its
      // 300 ms count from issue); so wait for the notice's own timeout first.
      await untilMetric(t.apiUrl, TIMED_OUT_NOTICES, (n) => n === 1, 1500);
      // Not given up at once: about 300 ms after it was issued.
      expect(Date.now() - noticeAt).toBeGreaterThanOrEqual(150);
      expect(await alice.client.call('chat.message', { request_id: 1 })).toEqual(resultOf({ request_id: 1 }));
      expect(Date.now() - noticeAt).toBeLessThanOrEqual(1500);
      // Timed out, not retried.
      expect(noticesOf('alice')).toHaveLength(1);
    });
  });
});
