import { TestGateway, startTestGateway } from './harness/gateway';
import { api } from './harness/http';
import { waitFor } from './harness/wait';

const API_TOKEN = 'SECRET_API_TOKEN_VALUE';

/** SPEC §10: JSON lines; never cookies, Authorization values, identities or bodies. */
describe('logs (SPEC §10)', () => {
  let t: TestGateway;
  beforeEach(
    async () => (t = await startTestGateway({ BACKEND_API_TOKEN: API_TOKEN, REQUEST_ID_HEADER: 'X-Request-Id' })),
  );
  afterEach(() => t.close());

  const bearer = { Authorization: `Bearer ${API_TOKEN}` };
  const AUTHORIZE = 'POST /gateway/authorize_connection';

  function parsedLogs(): Array<Record<string, unknown>> {
    return t.logs.map((line) => {
      try {
        return JSON.parse(line) as Record<string, unknown>;
      } catch {
        throw new Error(`log line is not JSON: ${line}`);
      }
    });
  }

  it('writes one JSON object per line and none of the secrets a session carries', async () => {
    const identity = { user_id: 'u1', token: 'SECRET_IDENTITY_VALUE' };
    t.upstream.on(AUTHORIZE, { json: identity });
    t.upstream.on('POST /do/thing', { json: { r: 'SECRET_RESULT' } });
    t.upstream.on('POST /do/fail', { status: 500, json: { e: 'SECRET_UPSTREAM_ERROR' } });

    const { client, hello } = await t.hello({
      headers: { Cookie: 'session=SECRET_COOKIE_VALUE', Authorization: 'Bearer SECRET_AUTH_VALUE' },
    });
    expect(hello).toEqual(['hello', {}, identity]);
    const auth = await t.upstream.requestTo('/gateway/authorize_connection');
    expect((auth.body as [unknown, unknown, Record<string, string>])[2]).toMatchObject({
      http_cookie: 'session=SECRET_COOKIE_VALUE',
      http_authorization: 'Bearer SECRET_AUTH_VALUE',
    });
    const cid = (auth.body as [{ connection_id: string }])[0].connection_id;

    expect(await client.call('do.thing', { request_id: 1 }, ['SECRET_ARG'], { p: 'SECRET_KWARG' })).toEqual([
      'result',
      { request_id: 1 },
      { r: 'SECRET_RESULT' },
    ]);
    const call = await t.upstream.requestTo('/do/thing');
    const identityHeader = String(call.headers.authorization);
    expect(identityHeader).toMatch(/^Gateway\+json /);
    const identityBase64 = identityHeader.slice('Gateway+json '.length);
    expect(JSON.parse(Buffer.from(identityBase64, 'base64').toString('utf8'))).toEqual(identity);
    expect((await client.call('do.fail', { request_id: 2 }, ['SECRET_ARG_2']))[0]).toBe('error');

    expect((await api(t.apiUrl, 'PUT', `/v1/connection/${cid}/subscriptions/room/1`, undefined, bearer)).status).toBe(
      204,
    );
    expect((await api(t.apiUrl, 'POST', '/v1/publish/room/1', { x: 'SECRET_PUBLISH' }, bearer)).status).toBe(204);
    expect(await client.next()).toEqual(['message', { topic: 'room.1' }, { x: 'SECRET_PUBLISH' }]);

    const initial = {
      shared: { room1: { note_register: [1, 'SECRET_LATTICE_INITIAL'] } },
      private: { u1: { room1: {} } },
    };
    expect((await api(t.apiUrl, 'PUT', `/v1/connection/${cid}/lattices/rooms`, initial, bearer)).status).toBe(204);
    expect(await client.next()).toEqual([
      'lattice',
      { namespace: 'rooms' },
      { room1: { note_register: [1, 'SECRET_LATTICE_INITIAL'] } },
    ]);
    expect(
      (
        await api(
          t.apiUrl,
          'POST',
          '/v1/lattice/rooms',
          { shared: { room1: { note_register: [2, 'SECRET_LATTICE_VALUE'] } } },
          bearer,
        )
      ).status,
    ).toBe(204);
    expect(await client.next()).toEqual([
      'lattice',
      { namespace: 'rooms' },
      { room1: { note_register: [2, 'SECRET_LATTICE_VALUE'] } },
    ]);
    const invalid = await api(
      t.apiUrl,
      'POST',
      '/v1/lattice/rooms',
      { shared: { room1: { bad_counter: 'SECRET_INVALID_VALUE' } } },
      bearer,
    );
    expect(invalid.status).toBe(400);
    const wrongToken = await api(
      t.apiUrl,
      'POST',
      '/v1/publish/room/1',
      { x: 1 },
      { Authorization: 'Bearer SECRET_WRONG_TOKEN' },
    );
    expect(wrongToken.status).toBe(401);

    t.upstream.on(AUTHORIZE, { status: 401, json: { error: 'SECRET_AUTH_ERROR_BODY' } });
    const refused = await t.connect({
      headers: { Cookie: 'session=SECRET_COOKIE_VALUE_2', Authorization: 'Bearer SECRET_AUTH_VALUE_2' },
    });
    expect(await refused.next()).toEqual([
      'fatal_error',
      { error_kind: 'http_error', http_error: 401 },
      { error: 'SECRET_AUTH_ERROR_BODY' },
    ]);
    expect((await refused.closed()).code).toBe(4401);
    await client.close();

    const closedLines = (): Array<Record<string, unknown>> =>
      parsedLogs().filter((entry) => entry.msg === 'connection closed');
    await waitFor(() => (closedLines().length === 2 ? true : undefined), 'two "connection closed" log lines');

    const logs = parsedLogs();
    expect(logs.filter((entry) => entry.msg === 'connection opened')).toHaveLength(2);
    expect(closedLines()).toContainEqual(expect.objectContaining({ connection_id: cid, code: 1005 }));
    expect(closedLines()).toContainEqual(expect.objectContaining({ code: 4401 }));
    expect(logs).toContainEqual(expect.objectContaining({ msg: 'authorization failed' }));
    for (const entry of logs) {
      expect(typeof entry.level).toBe('string');
      expect(typeof entry.time).toBe('string');
    }
    const leaks = t.logs.filter((line) => line.includes('SECRET') || line.includes(identityBase64));
    expect(leaks).toEqual([]);
  });

  it("logs the length of a client's close reason, never its text", async () => {
    const { client, cid } = await t.helloAs('alice');
    client.socket.close(4000, 'SECRET_CLOSE_REASON');
    await client.closed();
    const line = await waitFor(
      () => parsedLogs().find((entry) => entry.msg === 'connection closed' && entry.connection_id === cid),
      'the "connection closed" log line',
    );
    expect(line).toMatchObject({ code: 4000, reason_bytes: 'SECRET_CLOSE_REASON'.length, closed_by: 'client' });
    expect(t.logs.filter((text) => text.includes('SECRET'))).toEqual([]);
  });
});
