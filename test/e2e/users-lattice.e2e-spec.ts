import { TOPOLOGIES } from './harness/cluster';
import { TestGateway } from './harness/gateway';
import { api } from './harness/http';
import { Frame, WsClient } from './harness/ws-client';
import { expectPut } from './harness/v1';
import { expectNothingMore } from './harness/barrier';

type Statuses = Record<string, { status_register: [number, string] }>;

/** SPEC §7: the users lattice `gateway.user`, endpoints 7, 8, 9 and status pushes. */
describe.each(TOPOLOGIES)('users lattice (%s)', (_, startTestGateway) => {
  let t: TestGateway;
  afterEach(() => t.close());

  const connect = (user: string, query?: string): Promise<{ client: WsClient; cid: string }> => t.helloAs(user, query);

  /** The statuses of a `gateway.user` frame, checked for shape. */
  function statusesOf(frame: Frame): Statuses {
    expect(frame.slice(0, 2)).toEqual(['lattice', { namespace: 'gateway.user' }]);
    return frame[2] as Statuses;
  }

  /** `[ts, status]` with ts a millisecond timestamp taken between `from` and now. */
  function expectRegister(register: [number, string] | undefined, status: string, from: number): void {
    expect(register?.[1]).toBe(status);
    expect(typeof register?.[0]).toBe('number');
    expect(register![0]).toBeGreaterThanOrEqual(from);
    expect(register![0]).toBeLessThanOrEqual(Date.now());
  }

  describe('with the default activity window', () => {
    beforeEach(async () => (t = await startTestGateway()));

    it('endpoint 7 shows the statuses of the listed users: connected is active, never seen is offline with version 0', async () => {
      const startedAt = Date.now();
      const alice = await connect('alice');
      await connect('bob');
      await expectPut(t.apiUrl, `/v1/connection/${alice.cid}/users`, ['bob', 'carol']);
      const statuses = statusesOf(await alice.client.next());
      expect(Object.keys(statuses).sort()).toEqual(['bob', 'carol']);
      expectRegister(statuses.bob.status_register, 'active', startedAt);
      // [fix] SPEC §7: version 0, so a status stamped in the same millisecond always wins in a mirror.
      expect(statuses.carol.status_register).toEqual([0, 'offline']);
    });

    it('endpoint 7 called again sends the statuses of the users it lists', async () => {
      const alice = await connect('alice');
      await expectPut(t.apiUrl, `/v1/connection/${alice.cid}/users`, ['bob']);
      expect(Object.keys(statusesOf(await alice.client.next()))).toEqual(['bob']);
      await expectPut(t.apiUrl, `/v1/connection/${alice.cid}/users`, ['carol']);
      const statuses = statusesOf(await alice.client.next());
      expect(statuses).toEqual({ carol: { status_register: [0, 'offline'] } });
    });

    it("pushes a watched user's connection to every subscribed connection watching it", async () => {
      const startedAt = Date.now();
      const alice = await connect('alice');
      await expectPut(t.apiUrl, `/v1/connection/${alice.cid}/users`, ['bob']);
      expect(statusesOf(await alice.client.next()).bob.status_register).toEqual([0, 'offline']);
      const bob = await connect('bob');
      expectRegister(statusesOf(await alice.client.next()).bob?.status_register, 'active', startedAt);
      // Bob's own connection did not watch anything: it got nothing.
      await expectNothingMore(bob.client);
    });

    it('endpoint 8 reaches every subscribed connection of the user and no other', async () => {
      const startedAt = Date.now();
      const alice1 = await connect('alice', 'user=alice&n=1');
      const alice2 = await connect('alice', 'user=alice&n=2');
      const alice3 = await connect('alice', 'user=alice&n=3');
      const bob = await connect('bob');
      await expectPut(t.apiUrl, `/v1/connection/${alice1.cid}/users`, ['bob']);
      await expectPut(t.apiUrl, `/v1/connection/${alice2.cid}/users`, []);
      expect(Object.keys(statusesOf(await alice1.client.next()))).toEqual(['bob']);
      expect(statusesOf(await alice2.client.next())).toEqual({});
      // bob is subscribed too, but endpoint 8 names alice.
      await expectPut(t.apiUrl, `/v1/connection/${bob.cid}/users`, ['erin']);
      await bob.client.next();

      await expectPut(t.apiUrl, '/v1/user/alice/users', ['dave']);
      for (const alice of [alice1, alice2]) {
        const statuses = statusesOf(await alice.client.next());
        expect(statuses).toEqual({ dave: { status_register: [0, 'offline'] } });
      }
      await expectNothingMore(alice3.client);
      await expectNothingMore(bob.client);

      // dave is now on both watch lists: his connection is pushed to both.
      await connect('dave');
      for (const alice of [alice1, alice2])
        expectRegister(statusesOf(await alice.client.next()).dave?.status_register, 'active', startedAt);
      await expectNothingMore(alice3.client);
    });

    it('endpoint 8 for a user with no subscribed connection changes nothing', async () => {
      const alice = await connect('alice');
      await expectPut(t.apiUrl, '/v1/user/alice/users', ['dave']);
      await expectPut(t.apiUrl, '/v1/user/nobody/users', ['dave']);
      await expectNothingMore(alice.client);
      // alice was not subscribed, so dave's arrival is not pushed to her.
      await connect('dave');
      await expectNothingMore(alice.client);
    });

    it('endpoint 9 unsubscribes only that connection', async () => {
      const alice1 = await connect('alice', 'user=alice&n=1');
      const alice2 = await connect('alice', 'user=alice&n=2');
      await expectPut(t.apiUrl, `/v1/connection/${alice1.cid}/users`, ['bob']);
      await expectPut(t.apiUrl, `/v1/connection/${alice2.cid}/users`, ['bob']);
      await alice1.client.next();
      await alice2.client.next();

      const res = await api(t.apiUrl, 'DELETE', `/v1/connection/${alice1.cid}/users`);
      expect([res.status, res.text]).toEqual([204, '']);
      await connect('bob');
      expect(statusesOf(await alice2.client.next()).bob?.status_register[1]).toBe('active');
      await expectNothingMore(alice1.client);

      // Endpoint 8 no longer reaches the unsubscribed connection either.
      await expectPut(t.apiUrl, '/v1/user/alice/users', ['dave']);
      expect(Object.keys(statusesOf(await alice2.client.next()))).toEqual(['dave']);
      await expectNothingMore(alice1.client);
    });

    it('rejects a users body that is not an array of valid user ids with 400', async () => {
      const alice = await connect('alice');
      for (const body of [{ users: ['bob'] }, ['bob', 1], ['bad user'], 'bob']) {
        const res = await api(t.apiUrl, 'PUT', `/v1/connection/${alice.cid}/users`, body, {
          'Content-Type': 'application/json',
        });
        expect([JSON.stringify(body), res.status]).toEqual([JSON.stringify(body), 400]);
      }
      await expectNothingMore(alice.client);
    });
  });

  describe('with a short activity window', () => {
    beforeEach(
      async () => (t = await startTestGateway({ NEW_CONNECTION_IDLE_TIMEOUT: '1s', CLIENT_MIN_IDLE_TIMEOUT: '1s' })),
    );

    it('pushes inactive when a watched user goes idle and offline when its last connection then closes', async () => {
      const startedAt = Date.now();
      const alice = await connect('alice');
      const bob = await connect('bob');
      await expectPut(t.apiUrl, `/v1/connection/${alice.cid}/users`, ['bob']);
      expectRegister(statusesOf(await alice.client.next()).bob.status_register, 'active', startedAt);

      const inactive = statusesOf(await alice.client.next(3000)).bob?.status_register;
      expectRegister(inactive, 'inactive', startedAt);
      const inactiveAt = Date.now();
      await bob.client.close();
      const offline = statusesOf(await alice.client.next()).bob?.status_register;
      expectRegister(offline, 'offline', inactiveAt - 100);
      expect(offline![0]).toBeGreaterThanOrEqual(inactive![0]);
    });

    it('pushes offline without inactive when the watched user left before its deadline', async () => {
      const startedAt = Date.now();
      const alice = await connect('alice');
      const bob = await connect('bob');
      await expectPut(t.apiUrl, `/v1/connection/${alice.cid}/users`, ['bob']);
      expectRegister(statusesOf(await alice.client.next()).bob.status_register, 'active', startedAt);
      await bob.client.close();
      // Still active until the deadline: closing an active session pushes nothing.
      await expectNothingMore(alice.client);
      expectRegister(statusesOf(await alice.client.next(3000)).bob?.status_register, 'offline', startedAt);
    });
  });
});
