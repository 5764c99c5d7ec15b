import { TestCluster, startTestCluster } from './harness/cluster';
import { RecordedRequest } from './harness/fake-upstream';
import { userOf } from './harness/identity';
import { Frame, WsClient } from './harness/ws-client';
import { expectPut } from './harness/v1';

type Register = [number, string];

/** SPEC §11 "Presence and sessions are cluster-wide", §7 registers, §8 one notice per expiry. */
describe('cluster: presence and sessions across nodes (SPEC §11)', () => {
  let cluster: TestCluster;
  afterEach(() => cluster.close());

  function registersOf(frame: Frame): Record<string, Register> {
    expect(frame.slice(0, 2)).toEqual(['lattice', { namespace: 'gateway.user' }]);
    const statuses = frame[2] as Record<string, { status_register: Register }>;
    return Object.fromEntries(Object.entries(statuses).map(([user, value]) => [user, value.status_register]));
  }

  /** The next `gateway.user` push about `user`, as its register. */
  async function nextStatusOf(client: WsClient, user: string, ms = 3000): Promise<Register> {
    const registers = registersOf(await client.next(ms));
    expect(Object.keys(registers)).toEqual([user]);
    return registers[user];
  }

  describe('with the default activity window', () => {
    beforeEach(async () => (cluster = await startTestCluster(3)));

    it('shows a user connected on node B as active to a watcher on node A, and never-seen users as offline version 0', async () => {
      const [a, b, c] = cluster.nodes;
      await b.helloAs('bob');
      const alice = await a.helloAs('alice');
      await expectPut(c.apiUrl, `/v1/connection/${alice.cid}/users`, ['bob', 'nobody']);
      const registers = registersOf(await alice.client.next());
      expect(registers.bob[1]).toBe('active');
      expect(registers.nobody).toEqual([0, 'offline']);
    });

    it('pushes a status change made on another node to every watcher, with the same version everywhere', async () => {
      const [a, b, c] = cluster.nodes;
      const watchers = [await a.helloAs('alice'), await c.helloAs('carol')];
      for (const [i, watcher] of watchers.entries()) {
        await expectPut(cluster.nodes[i].apiUrl, `/v1/connection/${watcher.cid}/users`, ['bob']);
        expect(await nextStatusOf(watcher.client, 'bob')).toEqual([0, 'offline']);
      }
      await b.helloAs('bob');
      const seen = await Promise.all(watchers.map((watcher) => nextStatusOf(watcher.client, 'bob')));
      expect(seen[0][1]).toBe('active');
      expect(seen[1]).toEqual(seen[0]);
    });

    it('endpoint 8 through node C reaches the subscribed connections of the user on nodes A and B', async () => {
      const [a, b, c] = cluster.nodes;
      const onA = await a.helloAs('alice', 'user=alice&n=1');
      const onB = await b.helloAs('alice', 'user=alice&n=2');
      await expectPut(c.apiUrl, `/v1/connection/${onA.cid}/users`, []);
      await expectPut(c.apiUrl, `/v1/connection/${onB.cid}/users`, []);
      expect(registersOf(await onA.client.next())).toEqual({});
      expect(registersOf(await onB.client.next())).toEqual({});
      await expectPut(c.apiUrl, '/v1/user/alice/users', ['dave']);
      for (const { client } of [onA, onB]) expect(await nextStatusOf(client, 'dave')).toEqual([0, 'offline']);
    });
  });

  describe('with short activity windows', () => {
    beforeEach(async () => (cluster = await startTestCluster(3, { NEW_CONNECTION_IDLE_TIMEOUT: '600ms' })));

    it('sends exactly one session_inactive per expiry for a user connected to all three nodes', async () => {
      const sessions = await Promise.all(cluster.nodes.map((node, i) => node.helloAs('ulla', `user=ulla&n=${i}`)));
      const watcher = await cluster.nodes[0].helloAs('walt');
      await expectPut(cluster.nodes[1].apiUrl, `/v1/connection/${watcher.cid}/users`, ['ulla']);
      expect((await nextStatusOf(watcher.client, 'ulla'))[1]).toBe('active');
      // A later session as the barrier: its notice comes after any duplicate of ulla's could have.
      await cluster.nodes[2].helloAs('vera');
      const isNotice = (user: string) => (r: RecordedRequest) =>
        r.path === '/gateway/session_inactive' && userOf(r) === user;
      await cluster.upstream.nextRequest(isNotice('ulla'), 5000);
      expect((await nextStatusOf(watcher.client, 'ulla'))[1]).toBe('inactive');
      await cluster.upstream.nextRequest(isNotice('vera'), 5000);
      expect(cluster.upstream.requests.filter(isNotice('ulla'))).toHaveLength(1);
      expect(sessions).toHaveLength(3);
    });

    it('goes offline once the last connection anywhere closes after the user went inactive', async () => {
      const [a, b] = cluster.nodes;
      const bob = await b.helloAs('bob');
      const alice = await a.helloAs('alice');
      await expectPut(a.apiUrl, `/v1/connection/${alice.cid}/users`, ['bob']);
      expect((await nextStatusOf(alice.client, 'bob'))[1]).toBe('active');
      const inactive = await nextStatusOf(alice.client, 'bob');
      expect(inactive[1]).toBe('inactive');
      await bob.client.close();
      const offline = await nextStatusOf(alice.client, 'bob');
      expect(offline[1]).toBe('offline');
      expect(offline[0]).toBeGreaterThan(inactive[0]);
    });

    it("extends the cluster-wide deadline with a call's `active` on one node (no inactive before it)", async () => {
      const [a, b] = cluster.nodes;
      const bob = await b.helloAs('bob');
      const alice = await a.helloAs('alice');
      await expectPut(a.apiUrl, `/v1/connection/${alice.cid}/users`, ['bob']);
      expect((await nextStatusOf(alice.client, 'bob'))[1]).toBe('active');
      const calledAt = Date.now();
      await bob.client.call('chat.ping', { request_id: 1, active: 3 });
      // The next push is the expiry of the extended deadline, not the 600 ms window's.
      const inactive = await nextStatusOf(alice.client, 'bob', 6000);
      expect(inactive[1]).toBe('inactive');
      expect(inactive[0]).toBeGreaterThanOrEqual(calledAt + 2900);
    });
  });
});
