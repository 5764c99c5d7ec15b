import { OPCODE, rawFrame } from '../e2e/harness/raw-frames';
import { RawWsClient } from '../e2e/harness/raw-ws';
import { LoadClient, api } from './lib/clients';
import { GatewayProcess } from './lib/gateway';
import { rawHttp, requestBytes } from './lib/raw-http';
import { Checks, record } from './lib/report';
import { LoadUpstream } from './lib/upstream';

/** Every value planted below; none may appear in any log line, as is, in base64 or URL-encoded. */
const SECRET = {
  cookie: 'SECRETcookie7f3a',
  authorization: 'SECRETauthz91b2',
  query: 'SECRETquery44c1',
  apiToken: 'SECRETapitoken5e6d',
  wrongToken: 'SECRETwrongtoken0a9f',
  authField: 'SECRETauthfield3c8e',
  authFailBody: 'SECRETauthfail6d2a',
  args: 'SECRETargs8b1c',
  kwargs: 'SECRETkwargs2f7e',
  result: 'SECRETresult9a4d',
  upstreamError: 'SECRETupstreamerr5c3b',
  publish: 'SECRETpublish1e8f',
  lattice: 'SECRETlattice7d6a',
  latticeKey: 'SECRETlatticekey0b5c',
  brokenBody: 'SECRETbrokenbody4a2e',
  badFrame: 'SECRETbadframe8c7d',
  deepFrame: 'SECRETdeepframe3f1a',
};

describe('logs never carry secrets (issue 11, SPEC §10)', () => {
  let gateway: GatewayProcess;
  let upstream: LoadUpstream;
  afterAll(async () => {
    await gateway?.stop();
    await upstream?.close();
  });

  it('plants secrets in every place a session and the backend API carry them, at debug level, and finds none in the logs', async () => {
    const checks = new Checks();
    upstream = await LoadUpstream.start();
    upstream.authExtra = { token: SECRET.authField, profile: { email: `${SECRET.authField}@example.test` } };
    gateway = await GatewayProcess.start(
      {
        UPSTREAM_URL: upstream.url,
        LOG_LEVEL: 'debug',
        BACKEND_API_TOKEN: SECRET.apiToken,
        REQUEST_ID_HEADER: 'X-Request-Id',
        MAX_PAYLOAD_BYTES: '64KiB',
      },
      { keepAllLines: true },
    );
    const bearer = { Authorization: `Bearer ${SECRET.apiToken}` };
    const headers = { Cookie: `session=${SECRET.cookie}`, Authorization: `Bearer ${SECRET.authorization}` };
    const client = await LoadClient.open(gateway.wsUrl, `user=u1&token=${SECRET.query}`, { headers });
    const identity = client.hello![2];
    const identityBase64 = Buffer.from(JSON.stringify(identity)).toString('base64');
    const cid = client.cid;

    // Calls: args, kwargs and results; an upstream error body; an invalid call echoing its meta.
    expect((await client.call('echo', [SECRET.args], { k: SECRET.kwargs, r: SECRET.result }))[0]).toBe('result');
    expect((await client.call('status.500', [], { echo: SECRET.upstreamError }))[1].http_error).toBe(500);
    expect((await client.call('gateway.x', [SECRET.args]))[2]).toBe('invalid method');
    // The backend API: subscriptions, a publish, lattices, users; wrong tokens; broken bodies.
    expect(await api(gateway.apiUrl, 'PUT', `/v1/connection/${cid}/subscriptions/room`, undefined, bearer)).toBe(204);
    const message = new Promise<unknown>((resolve) => (client.onFrame = (f) => f[0] === 'message' && resolve(f[2])));
    expect(await api(gateway.apiUrl, 'POST', '/v1/publish/room', { text: SECRET.publish }, bearer)).toBe(204);
    expect(await message).toEqual({ text: SECRET.publish });
    const lattice = {
      shared: { [SECRET.latticeKey]: { v_register: [1, SECRET.lattice], s_set: [SECRET.lattice] } },
      private: { u1: { [SECRET.latticeKey]: {} } },
    };
    expect(await api(gateway.apiUrl, 'PUT', `/v1/connection/${cid}/lattices/ns`, lattice, bearer)).toBe(204);
    expect(
      await api(
        gateway.apiUrl,
        'POST',
        '/v1/lattice/ns',
        { shared: { [SECRET.latticeKey]: { n_counter: 2, v_register: [2, SECRET.lattice] } } },
        bearer,
      ),
    ).toBe(204);
    expect(
      await api(
        gateway.apiUrl,
        'POST',
        '/v1/lattice/ns',
        { shared: { k: { v_register: [1, SECRET.lattice, 'extra'] } } },
        bearer,
      ),
    ).toBe(400);
    expect(await api(gateway.apiUrl, 'PUT', `/v1/connection/${cid}/users`, ['u1', 'u2'], bearer)).toBe(204);
    expect(
      await api(gateway.apiUrl, 'POST', '/v1/publish/room', { x: 1 }, { Authorization: `Bearer ${SECRET.wrongToken}` }),
    ).toBe(401);
    const broken = [
      requestBytes(
        'POST',
        '/v1/publish/room',
        ['Content-Type: application/json', `Authorization: Bearer ${SECRET.apiToken}`],
        Buffer.from(`{"a":"${SECRET.brokenBody}"`),
      ),
      requestBytes(
        'POST',
        '/v1/publish/room',
        ['Content-Type: application/json', `Authorization: Bearer ${SECRET.apiToken}`, 'Content-Length: 500'],
        Buffer.from(`{"a":"${SECRET.brokenBody}`),
      ),
      requestBytes(
        'POST',
        '/v1/lattice/ns',
        ['Content-Type: application/json', `Authorization: Bearer ${SECRET.apiToken}`, 'Transfer-Encoding: chunked'],
        Buffer.from(`zz\r\n${SECRET.brokenBody}\r\n0\r\n\r\n`),
      ),
    ];
    for (const [i, parts] of broken.entries())
      await rawHttp(gateway.internalPort, [parts], i === 1 ? 'half-close' : 'wait');
    // Frames the gateway refuses: not JSON, too deep, invalid UTF-8 close reason.
    const raw = await RawWsClient.open(gateway.publicPort, [`Cookie: s=${SECRET.cookie}`]);
    await raw.next(5000);
    raw.write(
      rawFrame(
        OPCODE.text,
        Buffer.from(`["echo",{"request_id":1,"d":${'['.repeat(300)}"${SECRET.deepFrame}"${']'.repeat(300)}},[],{}]`),
      ),
    );
    expect((await raw.next(5000))[2]).toBe('nested too deep');
    raw.write(rawFrame(OPCODE.text, Buffer.from(`["echo",{"request_id":1},["${SECRET.badFrame}"],{}`)));
    expect((await raw.closed(5000)).code).toBe(1007);
    await raw.close();
    // Authorization refused with a secret body, and an invalid answer carrying secret fields.
    upstream.authReply = () => ({ status: 401, body: { error: SECRET.authFailBody } });
    await LoadClient.open(gateway.wsUrl, 'user=u2', { headers }).catch((err: Error) =>
      expect(err.message).toMatch(/before hello|expected hello/),
    );
    upstream.authReply = () => ({ status: 200, body: { no_user_id: SECRET.authFailBody, token: SECRET.authField } });
    await LoadClient.open(gateway.wsUrl, 'user=u3', { headers }).catch((err: Error) =>
      expect(err.message).toMatch(/before hello|expected hello/),
    );
    await client.close();
    // An ordering barrier: the gateway has logged the close above once the gauge shows it.
    for (
      const deadline = Date.now() + 5000;
      (await gateway.gauges()).gateway_connections !== 0 && Date.now() < deadline;
    )
      await api(gateway.apiUrl, 'GET', '/health/live');
    gateway.kill('SIGTERM');
    await gateway.exit(15_000);

    const forms = Object.entries(SECRET).flatMap(([name, value]) => [
      [name, value],
      [`${name} (base64)`, Buffer.from(value).toString('base64').replace(/=+$/, '')],
      [`${name} (URL-encoded)`, encodeURIComponent(value)],
    ]);
    forms.push(['identity (Gateway+json base64)', identityBase64.replace(/=+$/, '')]);
    const lines = gateway.rawLines;
    const leaks = forms.flatMap(([name, value]) =>
      lines.filter((line) => line.includes(value)).map((line) => `${name} in ${line.slice(0, 300)}`),
    );
    const notJson = lines.filter((line) => {
      try {
        return typeof JSON.parse(line) !== 'object';
      } catch {
        return true;
      }
    });
    checks.check(
      'no planted secret in any log line (plain, base64, URL-encoded)',
      leaks.length === 0,
      leaks.slice(0, 10),
    );
    checks.check('every log line is a JSON object', notJson.length === 0, notJson.slice(0, 5));
    checks.check(
      'the run logged at debug level (so the check saw the most verbose output)',
      (gateway.levelCounts.get('debug') ?? 0) > 0,
      Object.fromEntries(gateway.levelCounts),
    );
    record('log-secrets', {
      secrets: Object.keys(SECRET).length,
      forms_checked: forms.length,
      log_lines: lines.length,
      levels: Object.fromEntries(gateway.levelCounts),
      checks: checks.summary,
    });
    checks.assertAll();
  });
});
