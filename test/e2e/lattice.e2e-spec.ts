import { TestGateway, startTestGateway } from './harness/gateway';
import { api } from './harness/http';
import { deferred } from './harness/wait';
import { Frame, WsClient } from './harness/ws-client';
import { expectNothingMore } from './harness/barrier';

/** SPEC §3 (before hello), §6: lattices end to end through the backend API. */
describe('lattices', () => {
  let t: TestGateway;
  beforeEach(async () => (t = await startTestGateway()));
  afterEach(() => t.close());

  const AUTHORIZE = '/gateway/authorize_connection';

  /** The cid of the connection whose authorization carried `query` (SPEC §3: the backend learns it there). */
  /** A client past hello, with its cid. `query` defaults to `user=<user>`. */
  const connect = (user: string, query?: string): Promise<{ client: WsClient; cid: string }> => t.helloAs(user, query);

  async function subscribe(cid: string, body: unknown, namespace = 'my/ns'): Promise<void> {
    const res = await api(t.apiUrl, 'PUT', `/v1/connection/${cid}/lattices/${namespace}`, body);
    expect([res.status, res.text]).toEqual([204, '']);
  }

  async function update(body: unknown, namespace = 'my/ns'): Promise<void> {
    const res = await api(t.apiUrl, 'POST', `/v1/lattice/${namespace}`, body);
    expect([res.status, res.text]).toEqual([204, '']);
  }

  function lattice(data: unknown, namespace = 'my.ns'): Frame {
    return ['lattice', { namespace }, data] as Frame;
  }

  describe('counters (the swindon scenario)', () => {
    it('sends a snapshot on subscribe with private and shared variables together, dotted namespace', async () => {
      const { client, cid } = await connect('alice');
      await subscribe(cid, {
        shared: { room1: { last_message_counter: 100 } },
        private: { alice: { room1: { last_seen_counter: 100 } } },
      });
      expect(await client.next()).toEqual([
        'lattice',
        { namespace: 'my.ns' },
        { room1: { last_message_counter: 100, last_seen_counter: 100 } },
      ]);
    });

    it('sends only the variables an update changed', async () => {
      const { client, cid } = await connect('alice');
      await subscribe(cid, {
        shared: { room1: { last_message_counter: 100 } },
        private: { alice: { room1: { last_seen_counter: 100 } } },
      });
      await client.next();

      await update({
        shared: { room1: { last_message_counter: 101 } },
        private: { alice: { room1: { last_seen_counter: 102 } } },
      });
      expect(await client.next()).toEqual(lattice({ room1: { last_message_counter: 101, last_seen_counter: 102 } }));

      await update({
        shared: { room1: { last_message_counter: 99 } },
        private: { alice: { room1: { last_seen_counter: 107 } } },
      });
      expect(await client.next()).toEqual(lattice({ room1: { last_seen_counter: 107 } }));

      await update({
        shared: { room1: { last_message_counter: 115 } },
        private: { alice: { room1: { last_seen_counter: 55 } } },
      });
      expect(await client.next()).toEqual(lattice({ room1: { last_message_counter: 115 } }));
      await expectNothingMore(client);
    });

    it('sends no frame for an update that changes nothing the user sees', async () => {
      const { client, cid } = await connect('alice');
      await subscribe(cid, {
        shared: { room1: { last_message_counter: 100 } },
        private: { alice: { room1: { last_seen_counter: 100 } } },
      });
      await client.next();
      await update({
        shared: { room1: { last_message_counter: 50 } },
        private: { alice: { room1: { last_seen_counter: 100 } } },
      });
      await update({ shared: { room1: { last_message_counter: 100 } } });
      await update({});
      await expectNothingMore(client);
    });
  });

  describe('registers', () => {
    it('keeps the higher version, breaks ties by canonical JSON and sends only what changed', async () => {
      const { client, cid } = await connect('alice');
      await subscribe(cid, {
        shared: { room1: { topic_register: [1, 'a'] } },
        private: { alice: { room1: { draft_register: [1, 'x'] } } },
      });
      expect(await client.next()).toEqual(lattice({ room1: { topic_register: [1, 'a'], draft_register: [1, 'x'] } }));

      await update({
        shared: { room1: { topic_register: [2, 'b'] } },
        private: { alice: { room1: { draft_register: [2, { text: 'y' }] } } },
      });
      expect(await client.next()).toEqual(
        lattice({ room1: { topic_register: [2, 'b'], draft_register: [2, { text: 'y' }] } }),
      );

      await update({
        shared: { room1: { topic_register: [1, 'z'] } },
        private: { alice: { room1: { draft_register: [7, 'w'] } } },
      });
      expect(await client.next()).toEqual(lattice({ room1: { draft_register: [7, 'w'] } }));

      await update({
        shared: { room1: { topic_register: [5.5, 'c'] } },
        private: { alice: { room1: { draft_register: [3, 'q'] } } },
      });
      expect(await client.next()).toEqual(lattice({ room1: { topic_register: [5.5, 'c'] } }));

      // Equal versions: the greater canonical JSON wins ("d" > "c"; "a" < "d" changes nothing).
      await update({ shared: { room1: { topic_register: [5.5, 'd'] } } });
      expect(await client.next()).toEqual(lattice({ room1: { topic_register: [5.5, 'd'] } }));
      await update({
        shared: { room1: { topic_register: [5.5, 'a'] } },
        private: { alice: { room1: { draft_register: [7, 'w'] } } },
      });
      await expectNothingMore(client);

      await subscribe(cid, {});
      expect(await client.next()).toEqual(lattice({ room1: { topic_register: [5.5, 'd'], draft_register: [7, 'w'] } }));
    });
  });

  describe('sets', () => {
    it('delivers only the elements an update added', async () => {
      const { client, cid } = await connect('alice');
      await subscribe(cid, {
        shared: { room1: { members_set: ['a', 'b'] } },
        private: { alice: { room1: { tags_set: ['x'] } } },
      });
      expect(await client.next()).toEqual(lattice({ room1: { members_set: ['a', 'b'], tags_set: ['x'] } }));

      await update({
        shared: { room1: { members_set: ['b', 'c'] } },
        private: { alice: { room1: { tags_set: ['x', 'y'] } } },
      });
      const frame = await client.next();
      expect(frame).toEqual(lattice({ room1: { members_set: ['c'], tags_set: ['y'] } }));

      await update({ shared: { room1: { members_set: ['a'] } }, private: { alice: { room1: { tags_set: [] } } } });
      await expectNothingMore(client);

      await subscribe(cid, {});
      const snapshot = (await client.next()) as [
        string,
        unknown,
        { room1: { members_set: string[]; tags_set: string[] } },
      ];
      expect([...snapshot[2].room1.members_set].sort()).toEqual(['a', 'b', 'c']);
      expect([...snapshot[2].room1.tags_set].sort()).toEqual(['x', 'y']);
    });
  });

  describe('access', () => {
    it('shows a shared key only to users with a private entry for it, and its full values once they gain one', async () => {
      const alice = await connect('alice');
      const bob = await connect('bob');
      await subscribe(alice.cid, {
        shared: {
          room1: { last_message_counter: 10, title_register: [1, 'one'] },
          room2: { last_message_counter: 20 },
        },
        private: { alice: { room1: {} } },
      });
      expect(await alice.client.next()).toEqual(
        lattice({ room1: { last_message_counter: 10, title_register: [1, 'one'] } }),
      );
      await subscribe(bob.cid, { private: { bob: { room2: { last_seen_counter: 1 } } } });
      expect(await bob.client.next()).toEqual(lattice({ room2: { last_message_counter: 20, last_seen_counter: 1 } }));

      await update({ shared: { room1: { last_message_counter: 11 } } });
      expect(await alice.client.next()).toEqual(lattice({ room1: { last_message_counter: 11 } }));
      await update({ shared: { room2: { last_message_counter: 21 } } });
      expect(await bob.client.next()).toEqual(lattice({ room2: { last_message_counter: 21 } }));
      // Neither saw the other's key.
      await expectNothingMore(alice.client);
      await expectNothingMore(bob.client);

      // Bob gains room1 (an empty private entry grants access): the full shared values, nothing for alice.
      await update({ private: { bob: { room1: {} } } });
      expect(await bob.client.next()).toEqual(
        lattice({ room1: { last_message_counter: 11, title_register: [1, 'one'] } }),
      );
      await expectNothingMore(alice.client);

      await update({ shared: { room1: { last_message_counter: 12 } } });
      expect(await alice.client.next()).toEqual(lattice({ room1: { last_message_counter: 12 } }));
      expect(await bob.client.next()).toEqual(lattice({ room1: { last_message_counter: 12 } }));
    });

    it("never sends a user another user's private variables", async () => {
      const alice = await connect('alice');
      const bob = await connect('bob');
      await subscribe(alice.cid, { private: { alice: { room1: { last_seen_counter: 1 } } } });
      expect(await alice.client.next()).toEqual(lattice({ room1: { last_seen_counter: 1 } }));
      await subscribe(bob.cid, { private: { bob: { room1: { last_seen_counter: 5 } } } });
      expect(await bob.client.next()).toEqual(lattice({ room1: { last_seen_counter: 5 } }));
      await update({ private: { alice: { room1: { last_seen_counter: 2 } } } });
      expect(await alice.client.next()).toEqual(lattice({ room1: { last_seen_counter: 2 } }));
      await expectNothingMore(bob.client);
    });

    it("sends an already attached connection the update delta before a newcomer's snapshot", async () => {
      const alice = await connect('alice');
      await subscribe(alice.cid, { shared: { room1: { last_message_counter: 1 } }, private: { alice: { room1: {} } } });
      await alice.client.next();
      const bob = await connect('bob');
      await subscribe(bob.cid, { shared: { room1: { last_message_counter: 2 } }, private: { bob: { room1: {} } } });
      expect(await alice.client.next()).toEqual(lattice({ room1: { last_message_counter: 2 } }));
      expect(await bob.client.next()).toEqual(lattice({ room1: { last_message_counter: 2 } }));
      await expectNothingMore(bob.client);
    });
  });

  describe('expires_in', () => {
    it('deletes the private entry after the duration without sending a frame', async () => {
      const alice = await connect('alice');
      const startedAt = Date.now();
      await subscribe(alice.cid, {
        shared: { room1: { last_message_counter: 3 } },
        private: { alice: { room1: { expires_in: '300ms', last_seen_counter: 1 }, room2: { last_seen_counter: 2 } } },
      });
      expect(await alice.client.next()).toEqual(
        lattice({ room1: { last_message_counter: 3, last_seen_counter: 1 }, room2: { last_seen_counter: 2 } }),
      );

      // Fresh snapshots until room1 is gone; every frame must be a snapshot (room2 in it), never an expiry notice.
      let snapshot: Record<string, unknown> = {};
      const deadline = Date.now() + 3000;
      for (;;) {
        await subscribe(alice.cid, {});
        const frame = await alice.client.next();
        expect(frame[0]).toBe('lattice');
        snapshot = frame[2] as Record<string, unknown>;
        expect(snapshot.room2).toEqual({ last_seen_counter: 2 });
        if (!('room1' in snapshot)) break;
        if (Date.now() > deadline)
          throw new Error(
            `room1 still in alice's snapshot 3000 ms after subscribing with expires_in 300ms: ${JSON.stringify(snapshot)}`,
          );
        await t.openConnections(); // pace the polling with a round trip, not a sleep
      }
      const goneAfterMs = Date.now() - startedAt;
      expect(goneAfterMs).toBeGreaterThanOrEqual(250);
      expect(snapshot).toEqual({ room2: { last_seen_counter: 2 } });

      // Access went with the entry: room1's shared changes no longer reach alice.
      await update({ shared: { room1: { last_message_counter: 4 } } });
      await expectNothingMore(alice.client);
    });

    it('rejects expires_in under shared and unparsable durations with 400', async () => {
      const { cid } = await connect('alice');
      for (const body of [
        { shared: { room1: { expires_in: '1s' } } },
        { private: { alice: { room1: { expires_in: 'soon' } } } },
        { private: { alice: { room1: { expires_in: 5 } } } },
      ]) {
        const res = await api(t.apiUrl, 'PUT', `/v1/connection/${cid}/lattices/my/ns`, body);
        expect([JSON.stringify(body), res.status]).toEqual([JSON.stringify(body), 400]);
        expect(Object.keys(res.json() as object).sort()).toEqual(['error', 'message']);
      }
    });
  });

  describe('before hello', () => {
    it('sends hello, buffered messages, lattice snapshots, the users snapshot, then early call replies', async () => {
      const gate = deferred();
      t.upstream.on(`POST ${AUTHORIZE}`, async () => {
        await gate.promise;
        return { json: { user_id: 'alice' } };
      });
      const client = await t.connect({ query: 'user=alice' });
      const cid = await t.connectionIdOf('user=alice');
      // A client call sent before hello is processed right after it.
      client.send(['early.call', { request_id: 'e1' }, [], {}]);
      expect((await api(t.apiUrl, 'PUT', `/v1/connection/${cid}/subscriptions/t`)).status).toBe(204);
      expect((await api(t.apiUrl, 'POST', '/v1/publish/t', { n: 1 })).status).toBe(204);
      await subscribe(cid, {
        shared: { room1: { last_message_counter: 100 } },
        private: { alice: { room1: { last_seen_counter: 100 } } },
      });
      // A delta addressed before hello is not queued: the snapshot already contains it.
      await update({ shared: { room1: { last_message_counter: 101 } } });
      expect((await api(t.apiUrl, 'PUT', `/v1/connection/${cid}/users`, ['bob', 'alice'])).status).toBe(204);
      expect((await api(t.apiUrl, 'POST', '/v1/publish/t', { n: 2 })).status).toBe(204);
      await client.flush();
      expect(client.frames).toEqual([]);

      gate.resolve();
      expect(await client.next()).toEqual(['hello', {}, { user_id: 'alice' }]);
      expect(await client.next()).toEqual(['message', { topic: 't' }, { n: 1 }]);
      expect(await client.next()).toEqual(['message', { topic: 't' }, { n: 2 }]);
      expect(await client.next()).toEqual(lattice({ room1: { last_message_counter: 101, last_seen_counter: 100 } }));
      const users = await client.next();
      expect(users[0]).toBe('lattice');
      expect(users[1]).toEqual({ namespace: 'gateway.user' });
      const statuses = users[2] as Record<string, { status_register: [number, string] }>;
      expect(Object.keys(statuses).sort()).toEqual(['alice', 'bob']);
      expect(statuses.alice.status_register[1]).toBe('active');
      expect(statuses.bob.status_register[1]).toBe('offline');
      expect(await client.next()).toEqual(['result', { request_id: 'e1' }, { args: [], kwargs: {} }]);
      await expectNothingMore(client);
    });

    it('discards a pending lattice subscription when authorization fails', async () => {
      const gate = deferred();
      t.upstream.on(`POST ${AUTHORIZE}`, async () => {
        await gate.promise;
        return { status: 403, json: { reason: 'no' } };
      });
      const client = await t.connect({ query: 'user=alice' });
      const cid = await t.connectionIdOf('user=alice');
      await subscribe(cid, { private: { alice: { room1: { last_seen_counter: 1 } } } });
      gate.resolve();
      expect(await client.next()).toEqual([
        'fatal_error',
        { error_kind: 'http_error', http_error: 403 },
        { reason: 'no' },
      ]);
      expect(await client.closed()).toEqual({ code: 4403, reason: 'backend_error' });
      await t.untilOpenConnections(0);
      await update({ shared: { room1: { last_message_counter: 1 } } });
    });
  });

  describe('unsubscribe and close', () => {
    /** Alice and Bob both attached to my/ns with access to room1, snapshots consumed. */
    async function aliceAndBobOnRoom1(): Promise<{
      alice: { client: WsClient; cid: string };
      bob: { client: WsClient; cid: string };
    }> {
      const alice = await connect('alice');
      const bob = await connect('bob');
      await subscribe(alice.cid, { shared: { room1: { last_message_counter: 1 } }, private: { alice: { room1: {} } } });
      await alice.client.next();
      await subscribe(bob.cid, { private: { bob: { room1: {} } } });
      await bob.client.next();
      return { alice, bob };
    }

    it('stops deltas to an unsubscribed connection only', async () => {
      const { alice, bob } = await aliceAndBobOnRoom1();

      const res = await api(t.apiUrl, 'DELETE', `/v1/connection/${alice.cid}/lattices/my/ns`);
      expect([res.status, res.text]).toEqual([204, '']);
      await update({ shared: { room1: { last_message_counter: 2 } } });
      expect(await bob.client.next()).toEqual(lattice({ room1: { last_message_counter: 2 } }));
      await expectNothingMore(alice.client);
    });

    it("forgets a closed client's subscriptions: later updates succeed and reach the others", async () => {
      const { alice, bob } = await aliceAndBobOnRoom1();

      await alice.client.close();
      await t.untilOpenConnections(1);
      await update({
        shared: { room1: { last_message_counter: 2 } },
        private: { alice: { room1: { last_seen_counter: 1 } } },
      });
      expect(await bob.client.next()).toEqual(lattice({ room1: { last_message_counter: 2 } }));
      // Endpoint 4 for the gone cid: a well-formed unknown cid is 204, nothing happens.
      await subscribe(alice.cid, { private: { alice: { room1: {} } } });
      await expectNothingMore(bob.client);

      await bob.client.close();
      await t.untilOpenConnections(0);
      await update({ shared: { room1: { last_message_counter: 3 } } });
      expect(t.logs.filter((line) => (JSON.parse(line) as { level: string }).level === 'error')).toEqual([]);
    });
  });
});
