import type { Socket } from 'node:net';
import { TestGateway, startTestGateway } from './harness/gateway';
import { ApiResponse, api, chunked } from './harness/http';
import { RawWsClient } from './harness/raw-ws';
import { PROTOCOL } from './harness/ws-client';

/**
 * SPEC limits without an e2e test elsewhere: permessage-deflate (§1), lattice
 * key and private user id lengths (§6.1), 413 on the body-less DELETE
 * endpoints 2 and 5 (§5), and the 5 s destroy of a slow consumer that never
 * completes the closing handshake (§9).
 */

const KIB = 1024;
/** Over MAX_PAYLOAD_BYTES=1KiB. */
const OVERSIZED = JSON.stringify({ text: 'x'.repeat(2 * KIB) });

/** 400: a JSON body with exactly a non-empty string `error` and a non-empty string `message` (SPEC §5). */
function expectBadRequest(res: ApiResponse, what: string): void {
  expect({ what, status: res.status, contentType: res.headers.get('content-type') }).toEqual({
    what,
    status: 400,
    contentType: expect.stringMatching(/^application\/json/),
  });
  const body = res.json() as Record<string, unknown>;
  expect({ what, keys: Object.keys(body).sort() }).toEqual({ what, keys: ['error', 'message'] });
  expect({ what, body }).toEqual({
    what,
    body: { error: expect.stringMatching(/./), message: expect.stringMatching(/./) },
  });
}

function expectNoContent(res: ApiResponse, what: string): void {
  expect({ what, status: res.status, text: res.text }).toEqual({ what, status: 204, text: '' });
}

describe('permessage-deflate is not negotiated (SPEC §1)', () => {
  let t: TestGateway;
  beforeEach(async () => (t = await startTestGateway()));
  afterEach(() => t.close());

  it.each([
    ['permessage-deflate; client_max_window_bits'],
    ['permessage-deflate'],
    ['permessage-deflate; server_no_context_takeover; client_no_context_takeover'],
  ])('answers an offer of "%s" with a 101 without Sec-WebSocket-Extensions, then plain frames', async (offer) => {
    const raw = await RawWsClient.open(t.gateway.publicAddress.port, [`Sec-WebSocket-Extensions: ${offer}`]);
    try {
      const response = await raw.handshake();
      expect(response.status).toBe(101);
      // The header lines are visible: the accepted subprotocol is among them.
      expect(response.headerLines).toContain(`Sec-WebSocket-Protocol: ${PROTOCOL}`);
      expect({
        extensionHeaders: response.headerLines.filter((line) => /^sec-websocket-extensions\s*:/i.test(line)),
      }).toEqual({ extensionHeaders: [] });
      // The hello arrives as an uncompressed text frame the raw reader can parse.
      expect(await raw.next()).toEqual(['hello', {}, { user_id: 'u1' }]);
    } finally {
      await raw.close();
    }
  });
});

describe('lattice key and private user id lengths (SPEC §6.1, §6.4)', () => {
  let t: TestGateway;
  let cid: string;
  beforeEach(async () => {
    t = await startTestGateway();
    ({ cid } = await t.helloAs('owner'));
  });
  afterEach(() => t.close());

  /** 256 characters from the whole key set `[A-Za-z0-9:_.-]`. */
  const KEY_256 = 'Key:_.-9'.repeat(32);
  const KEY_257 = KEY_256 + 'k';
  /** 256 characters from the user id set `[A-Za-z0-9:_/-]`. */
  const USER_256 = 'User:_/-'.repeat(32);
  const USER_257 = USER_256 + 'u';

  const ENDPOINTS: ReadonlyArray<[number, string, () => string]> = [
    [4, 'PUT', () => `/v1/connection/${cid}/lattices/lim/ns`],
    [6, 'POST', () => '/v1/lattice/lim/ns'],
  ];

  const CASES: ReadonlyArray<[string, (key: string, user: string) => unknown, string, string, string, string]> = [
    ['a shared key', (key) => ({ shared: { [key]: { n_counter: 1 } } }), KEY_256, 'u1', KEY_257, 'u1'],
    [
      'a key in a private entry',
      (key, user) => ({ private: { [user]: { [key]: { n_counter: 1 } } } }),
      KEY_256,
      'u1',
      KEY_257,
      'u1',
    ],
    ['a private user id', (key, user) => ({ private: { [user]: { [key]: {} } } }), 'k', USER_256, 'k', USER_257],
  ];

  describe.each(ENDPOINTS)('endpoint %i (%s)', (n, method, pathOf) => {
    it.each(CASES)(
      'accepts %s of 256 characters with 204 and refuses 257 with 400 {error, message}',
      async (what, bodyOf, okKey, okUser, badKey, badUser) => {
        expect([okKey.length, okUser.length].includes(256) && [badKey.length, badUser.length].includes(257)).toBe(true);
        expectNoContent(
          await api(t.apiUrl, method, pathOf(), bodyOf(okKey, okUser)),
          `endpoint ${n}: ${what} of 256 characters`,
        );
        expectBadRequest(
          await api(t.apiUrl, method, pathOf(), bodyOf(badKey, badUser)),
          `endpoint ${n}: ${what} of 257 characters`,
        );
      },
    );
  });

  it('delivers a 256-character key to a client whose 256-character user id has a private entry for it', async () => {
    const { client, cid: own } = await t.helloAs(USER_256);
    expectNoContent(
      await api(t.apiUrl, 'PUT', `/v1/connection/${own}/lattices/lim/ns`, {
        shared: { [KEY_256]: { n_counter: 1 } },
        private: { [USER_256]: { [KEY_256]: { seen_counter: 1 } } },
      }),
      'subscribe',
    );
    expect(await client.next()).toEqual([
      'lattice',
      { namespace: 'lim.ns' },
      { [KEY_256]: { n_counter: 1, seen_counter: 1 } },
    ]);
    expectNoContent(
      await api(t.apiUrl, 'POST', '/v1/lattice/lim/ns', { shared: { [KEY_256]: { n_counter: 2 } } }),
      'update',
    );
    expect(await client.next()).toEqual(['lattice', { namespace: 'lim.ns' }, { [KEY_256]: { n_counter: 2 } }]);
  });
});

describe('413 on the body-less DELETE endpoints 2 and 5 (SPEC §5, MAX_PAYLOAD_BYTES=1KiB)', () => {
  const DELETES: ReadonlyArray<[number, (cid: string) => string]> = [
    [2, (c) => `/v1/connection/${c}/subscriptions/t`],
    [5, (c) => `/v1/connection/${c}/lattices/ns`],
  ];

  describe('without a token', () => {
    let t: TestGateway;
    let cid: string;
    beforeAll(async () => {
      t = await startTestGateway({ MAX_PAYLOAD_BYTES: '1KiB' });
      ({ cid } = await t.helloAs('u1'));
    });
    afterAll(() => t.close());

    it.each(DELETES)(
      'endpoint %i answers 413 with Connection: close to a 2 KiB body with Content-Length',
      async (n, pathOf) => {
        const res = await api(t.apiUrl, 'DELETE', pathOf(cid), OVERSIZED);
        expect({ n, status: res.status, connection: res.headers.get('connection'), text: res.text }).toEqual({
          n,
          status: 413,
          connection: 'close',
          text: '',
        });
      },
    );

    it.each(DELETES)('endpoint %i answers 413 with Connection: close to a chunked 2 KiB body', async (n, pathOf) => {
      const half = OVERSIZED.length / 2;
      const res = await chunked(t.apiUrl, 'DELETE', pathOf(cid), [OVERSIZED.slice(0, half), OVERSIZED.slice(half)]);
      expect({ n, status: res.status, connection: res.headers.get('connection'), text: await res.text() }).toEqual({
        n,
        status: 413,
        connection: 'close',
        text: '',
      });
    });

    it.each(DELETES)(
      'endpoint %i answers 400, not 413, to a body of exactly 1 KiB, and 204 without a body',
      async (n, pathOf) => {
        const exact = JSON.stringify('x'.repeat(KIB - 2));
        expect(Buffer.byteLength(exact)).toBe(KIB);
        expectBadRequest(await api(t.apiUrl, 'DELETE', pathOf(cid), exact), `endpoint ${n} with 1 KiB`);
        expectNoContent(await api(t.apiUrl, 'DELETE', pathOf(cid)), `endpoint ${n} without a body`);
      },
    );

    it.each(DELETES)(
      'endpoint %i answers 404, not 413, to an oversized body on a malformed conn_id',
      async (n, pathOf) => {
        const res = await api(t.apiUrl, 'DELETE', pathOf('a.b'), OVERSIZED);
        expect({ n, status: res.status, text: res.text }).toEqual({ n, status: 404, text: '' });
      },
    );
  });

  describe('with BACKEND_API_TOKEN=secret', () => {
    let t: TestGateway;
    let cid: string;
    beforeAll(async () => {
      t = await startTestGateway({ MAX_PAYLOAD_BYTES: '1KiB', BACKEND_API_TOKEN: 'secret' });
      ({ cid } = await t.helloAs('u1'));
    });
    afterAll(() => t.close());

    it.each(DELETES)(
      'endpoint %i answers 401 without the token and 413 with it to an oversized body',
      async (n, pathOf) => {
        const anonymous = await api(t.apiUrl, 'DELETE', pathOf(cid), OVERSIZED);
        expect({ n, status: anonymous.status, text: anonymous.text }).toEqual({ n, status: 401, text: '' });
        const authorized = await api(t.apiUrl, 'DELETE', pathOf(cid), OVERSIZED, { Authorization: 'Bearer secret' });
        expect({ n, status: authorized.status, connection: authorized.headers.get('connection') }).toEqual({
          n,
          status: 413,
          connection: 'close',
        });
      },
    );
  });
});

describe('slow consumer that never completes the closing handshake (SPEC §9)', () => {
  /** Most messages published before giving up: ~40 MiB, far beyond the loopback kernel buffers. */
  const MAX_PUBLISHES = 4000;
  const PAYLOAD = 'x'.repeat(10 * KIB);
  /** The gateway must still hold the connection this long after the close (SPEC: destroyed 5 s later). */
  const STILL_OPEN_MS = 3500;
  /** ... and must have destroyed it within this long. */
  const DESTROYED_WITHIN_MS = 7000;

  let t: TestGateway;
  beforeEach(async () => (t = await startTestGateway({ CLIENT_QUEUE_MAX_BYTES: '64KiB' })));
  afterEach(() => t.close());

  async function slowConsumerCloses(): Promise<number> {
    const text = await (await fetch(t.apiUrl + '/metrics')).text();
    const line = /^gateway_slow_consumer_closes_total (\S+)$/m.exec(text);
    if (line === null) throw new Error('gateway_slow_consumer_closes_total missing from /metrics');
    return Number(line[1]);
  }

  /**
   * Publish 10 KiB messages one at a time, reading the slow-consumer counter
   * after each, until the gateway closes the slow consumer. Returns the window
   * in which the close happened: after `notBefore`, by `by` (Date.now() ms).
   */
  async function floodUntilSlowConsumerClose(): Promise<{ notBefore: number; by: number }> {
    for (let seq = 0; seq < MAX_PUBLISHES; seq++) {
      const notBefore = Date.now();
      expect((await api(t.apiUrl, 'POST', '/v1/publish/flood', { seq, pad: PAYLOAD })).status).toBe(204);
      if ((await slowConsumerCloses()) > 0) return { notBefore, by: Date.now() };
    }
    throw new Error(`no slow-consumer close after ${MAX_PUBLISHES} messages of 10 KiB`);
  }

  /**
   * Watch `gateway_connections` until it reads 0, within `ms`; every reading
   * before must be 1. Returns when it was last seen 1 and first seen 0.
   */
  async function watchUntilGone(ms: number): Promise<{ lastOpenAt: number; goneAt: number }> {
    const deadline = Date.now() + ms;
    let lastOpenAt = Date.now();
    for (;;) {
      const readAt = Date.now();
      const open = await t.openConnections();
      if (open === 0) return { lastOpenAt, goneAt: Date.now() };
      if (open !== 1)
        throw new Error(`gateway_connections read ${open} while watching the slow consumer (expected 1 or 0)`);
      lastOpenAt = readAt;
      if (Date.now() > deadline)
        throw new Error(`timed out after ${ms} ms waiting for gateway_connections 0 (still 1)`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }

  it('keeps the connection about 5 s after the 1008 close, then destroys it', async () => {
    const { client, cid } = await t.helloAs('slow');
    expect((await api(t.apiUrl, 'PUT', `/v1/connection/${cid}/subscriptions/flood`)).status).toBe(204);
    const tcp = (client.socket as unknown as { _socket: Socket })._socket;
    try {
      // The client stops reading and never resumes: its close frame is never read, so the handshake cannot complete.
      tcp.pause();
      const close = await floodUntilSlowConsumerClose();
      expect(await t.openConnections()).toBe(1);
      const { lastOpenAt, goneAt } = await watchUntilGone(DESTROYED_WITHIN_MS);
      // Conservative bounds: still open at least this long after the close, gone at most this long after it.
      const openAtLeastMs = lastOpenAt - close.by;
      const goneAtMostMs = goneAt - close.notBefore;
      expect({ openAtLeastMs, stillOpenLongEnough: openAtLeastMs >= STILL_OPEN_MS }).toEqual({
        openAtLeastMs,
        stillOpenLongEnough: true,
      });
      expect({ goneAtMostMs, goneSoonEnough: goneAtMostMs <= DESTROYED_WITHIN_MS }).toEqual({
        goneAtMostMs,
        goneSoonEnough: true,
      });
      expect(await slowConsumerCloses()).toBe(1);
    } finally {
      tcp.destroy();
    }
  }, 20000);
});
