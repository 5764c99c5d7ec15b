import { TestGateway, startTestGateway } from './harness/gateway';
import { RawWsClient } from './harness/raw-ws';
import { deferred } from './harness/wait';
import { HandshakeRefused, PROTOCOL, WsClient } from './harness/ws-client';

const LEGACY = 'v1.swindon-lattice+json';

/** The refusal of a handshake that must not succeed. */
async function refusal(connecting: Promise<WsClient>): Promise<HandshakeRefused> {
  const outcome = await connecting.then(
    (client) => client,
    (err: unknown) => err,
  );
  if (outcome instanceof WsClient) {
    await outcome.close();
    throw new Error('expected the handshake to be refused, but it succeeded');
  }
  if (!(outcome instanceof HandshakeRefused)) throw outcome;
  return outcome;
}

describe('WebSocket handshake (SPEC §2)', () => {
  let t: TestGateway;
  afterEach(() => t.close());

  describe('with the default configuration', () => {
    beforeEach(async () => (t = await startTestGateway()));

    it('answers 404 to an upgrade on a path without a handler', async () => {
      const refused = await refusal(t.connect({ path: '/nowhere' }));
      expect(refused.status).toBe(404);
    });

    it('answers 400 with a one-line body naming the protocol when no subprotocol is offered', async () => {
      const refused = await refusal(t.connect({ protocols: null }));
      expect(refused.status).toBe(400);
      expect(refused.body.trim()).not.toContain('\n');
      expect(refused.body).toContain(PROTOCOL);
    });

    it('answers 400 when the offered list lacks both of our subprotocols', async () => {
      const refused = await refusal(t.connect({ protocols: ['v2.other+json', 'chat'] }));
      expect(refused.status).toBe(400);
      expect(refused.body).toContain(PROTOCOL);
    });

    it('accepts the legacy subprotocol and echoes it', async () => {
      const { client, hello } = await t.hello({ protocols: [LEGACY] });
      expect(client.protocol).toBe(LEGACY);
      expect(hello).toEqual(['hello', {}, { user_id: 'u1' }]);
    });

    it('prefers our subprotocol when both are offered', async () => {
      const { client } = await t.hello({ protocols: [LEGACY, PROTOCOL] });
      expect(client.protocol).toBe(PROTOCOL);
    });

    it('serves GET /health/live and nothing else over plain HTTP on the public port', async () => {
      expect((await fetch(t.publicUrl + '/health/live')).status).toBe(200);
      expect((await fetch(t.publicUrl + '/v1/anything')).status).toBe(404);
      expect((await fetch(t.publicUrl + '/metrics')).status).toBe(404);
    });

    it('answers a duplicated Authorization header with fatal_error 400 and close 4400, without calling the backend', async () => {
      const client = await t.connect({ headers: { Authorization: ['Bearer a', 'Bearer b'] } });
      expect(await client.next()).toEqual(['fatal_error', { error_kind: 'http_error', http_error: 400 }, null]);
      expect(await client.closed()).toEqual({ code: 4400, reason: 'backend_error' });
      await expectOnlyTheBarrierReachedTheUpstream();
    });

    it('answers a duplicated Cookie header with fatal_error 400 and close 4400, without calling the backend', async () => {
      // Node's http client joins a Cookie array into one line, so this request is written by hand.
      const raw = await RawWsClient.open(t.gateway.publicAddress.port, ['Cookie: a=1', 'Cookie: b=2']);
      try {
        expect((await raw.handshake()).status).toBe(101);
        expect(await raw.next()).toEqual(['fatal_error', { error_kind: 'http_error', http_error: 400 }, null]);
        expect(await raw.closed()).toEqual({ code: 4400, reason: 'backend_error' });
      } finally {
        await raw.close();
      }
      await expectOnlyTheBarrierReachedTheUpstream();
    });

    it('accepts a single Cookie and a single Authorization header written by hand', async () => {
      const raw = await RawWsClient.open(t.gateway.publicAddress.port, ['Cookie: a=1; b=2', 'Authorization: Bearer x']);
      try {
        expect((await raw.handshake()).status).toBe(101);
        expect(await raw.next()).toEqual(['hello', {}, { user_id: 'u1' }]);
      } finally {
        await raw.close();
      }
      const auth = await t.upstream.requestTo('/gateway/authorize_connection');
      expect((auth.body as unknown[])[2]).toEqual({
        http_cookie: 'a=1; b=2',
        http_authorization: 'Bearer x',
        url_querystring: '',
      });
    });
  });

  /**
   * Barrier: a well-behaved client authorizes and calls; if the refused
   * connection had reached the upstream, its request would be recorded too.
   */
  async function expectOnlyTheBarrierReachedTheUpstream(): Promise<void> {
    const { client } = await t.hello({ query: 'user=barrier' });
    expect(await client.call('barrier', { request_id: 1 })).toEqual([
      'result',
      { request_id: 1 },
      { args: [], kwargs: {} },
    ]);
    const seen = t.upstream.requests.map((r) => [
      r.path,
      (r.body as [{ connection_id?: string }, unknown, { url_querystring?: string }])[2],
    ]);
    expect(seen).toEqual([
      [
        '/gateway/authorize_connection',
        { http_cookie: null, http_authorization: null, url_querystring: 'user=barrier' },
      ],
      ['/barrier', {}],
    ]);
  }

  describe('without ALLOWED_ORIGINS: same origin only (SPEC §1, issue 20)', () => {
    beforeEach(async () => (t = await startTestGateway()));
    const host = (): string => new URL(t.publicUrl).host;

    it('answers 403 to a cross-site origin, and sends no authorization request', async () => {
      const refused = await refusal(t.connect({ headers: { Origin: 'https://evil.example' } }));
      expect(refused.status).toBe(403);
      expect(refused.body).toBe('origin not allowed\n');
      await expectOnlyTheBarrierReachedTheUpstream();
    });

    it('answers 403 to an origin on the same host but another port', async () => {
      const refused = await refusal(
        t.connect({ headers: { Origin: `http://127.0.0.1:${Number(host().split(':')[1]) + 1}` } }),
      );
      expect(refused.status).toBe(403);
    });

    it('accepts the origin of its own host and port', async () => {
      const { hello } = await t.hello({ headers: { Origin: `http://${host()}` } });
      expect(hello[0]).toBe('hello');
    });

    it('accepts a handshake without an Origin header', async () => {
      const { hello } = await t.hello();
      expect(hello[0]).toBe('hello');
    });
  });

  describe('with ALLOWED_ORIGINS=*', () => {
    beforeEach(async () => (t = await startTestGateway({ ALLOWED_ORIGINS: '*' })));

    it('accepts any origin', async () => {
      const { hello } = await t.hello({ headers: { Origin: 'https://elsewhere.example' } });
      expect(hello[0]).toBe('hello');
    });
  });

  describe('with ALLOWED_ORIGINS', () => {
    beforeEach(
      async () => (t = await startTestGateway({ ALLOWED_ORIGINS: 'https://app.example,https://other.example' })),
    );

    it('accepts a listed origin', async () => {
      const { hello } = await t.hello({ headers: { Origin: 'https://other.example' } });
      expect(hello[0]).toBe('hello');
    });

    it('answers 403 to an origin that is not listed', async () => {
      const refused = await refusal(t.connect({ headers: { Origin: 'https://evil.example' } }));
      expect(refused.status).toBe(403);
    });

    it('accepts a handshake without an Origin header', async () => {
      const { hello } = await t.hello();
      expect(hello[0]).toBe('hello');
    });
  });

  describe('with MAX_CONNECTIONS=2', () => {
    beforeEach(async () => (t = await startTestGateway({ MAX_CONNECTIONS: '2' })));

    it('answers 503 to the third handshake while two connections still await their authorization', async () => {
      const release = deferred();
      t.upstream.on('POST /gateway/authorize_connection', async () => {
        await release.promise;
        return { json: { user_id: 'u1' } };
      });
      const first = await t.connect();
      const second = await t.connect();
      await t.upstream.requestTo('/gateway/authorize_connection');
      await t.upstream.requestTo('/gateway/authorize_connection');
      const refused = await refusal(t.connect());
      expect(refused.status).toBe(503);
      release.resolve();
      expect((await first.next())[0]).toBe('hello');
      expect((await second.next())[0]).toBe('hello');
    });

    it('accepts a new handshake once a connection has left', async () => {
      const { client: first } = await t.hello();
      await t.hello();
      await first.close();
      await t.untilOpenConnections(1);
      const { hello } = await t.hello();
      expect(hello[0]).toBe('hello');
    });
  });
});
