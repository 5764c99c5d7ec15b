import type { UpstreamResponse } from '../upstream/upstream-response';
import { MAX_AUTH_JSON_BYTES, authOutcome, identityOf } from './auth-response';

function response(status: number, contentType: string | undefined, body: string): UpstreamResponse {
  return { kind: 'response', status, contentType, body: Buffer.from(body, 'utf8') };
}

function ok(body: string, contentType = 'application/json'): UpstreamResponse {
  return response(200, contentType, body);
}

/** A body whose compact JSON is exactly `bytes` long. */
function bodyOfBytes(bytes: number): string {
  const head = JSON.stringify({ user_id: 'u', pad: '' });
  return JSON.stringify({ user_id: 'u', pad: 'x'.repeat(bytes - head.length) });
}

describe(authOutcome.name, () => {
  describe('a valid answer', () => {
    it.each([
      ['a minimal object', '{"user_id":"u1"}'],
      ['extra fields', '{"user_id":"u1","name":"Ann","roles":["a","b"],"n":1.5}'],
      ['whitespace around the JSON', '  {\n  "user_id" : "u1"\n}\n'],
      ['a 256-char user id', JSON.stringify({ user_id: 'u'.repeat(256) })],
      ['every allowed user id symbol', JSON.stringify({ user_id: 'aZ09:_/-' })],
      ['non-ASCII data besides the user id', JSON.stringify({ user_id: 'u1', name: 'Zoë 🚀' })],
    ])('with %s gives an identity', (_case, body) => {
      const outcome = authOutcome(ok(body));
      expect(outcome).toEqual({
        ok: true,
        identity: identityOf(JSON.parse(body).user_id, JSON.stringify(JSON.parse(body))),
      });
    });

    it.each([
      'application/json',
      'application/json; charset=utf-8',
      'APPLICATION/JSON;charset=UTF-8',
      'application/json; charset="utf-8"',
    ])('accepts Content-Type %p', (contentType) => {
      expect(authOutcome(ok('{"user_id":"u"}', contentType)).ok).toBe(true);
    });

    it('carries the compact JSON of the whole object', () => {
      const outcome = authOutcome(ok('{ "user_id" : "u1", "extra" : { "a" : [1, 2] } }'));
      expect(outcome).toMatchObject({
        ok: true,
        identity: { userId: 'u1', json: '{"user_id":"u1","extra":{"a":[1,2]}}' },
      });
    });

    it('builds the Authorization value from standard padded base64 of the whole object', () => {
      const whole = { user_id: 'u1', extra: 'é' };
      const json = JSON.stringify(whole);
      const outcome = authOutcome(ok(JSON.stringify(whole, null, 2)));
      if (!outcome.ok) throw new Error(outcome.reason);
      const [scheme, b64] = outcome.identity.authorization.split(' ');
      expect(scheme).toBe('Gateway+json');
      expect(b64).toMatch(/^[A-Za-z0-9+/]*={0,2}$/);
      expect(b64.length % 4).toBe(0);
      expect(JSON.parse(Buffer.from(b64, 'base64').toString('utf8'))).toEqual(whole);
      expect(b64).toBe(Buffer.from(json, 'utf8').toString('base64'));
    });

    it('accepts a response of exactly 8 KiB of compact JSON', () => {
      expect(authOutcome(ok(bodyOfBytes(MAX_AUTH_JSON_BYTES))).ok).toBe(true);
    });

    it('measures the 8 KiB on the compact JSON, not the body', () => {
      const compact = bodyOfBytes(MAX_AUTH_JSON_BYTES);
      const padded = JSON.stringify(JSON.parse(compact), null, 8);
      expect(padded.length).toBeGreaterThan(MAX_AUTH_JSON_BYTES);
      expect(authOutcome(ok(padded)).ok).toBe(true);
    });
  });

  describe('a passed-through status', () => {
    it.each([400, 401, 403, 404, 410, 500, 503])('fails %i with that status and its JSON body', (status) => {
      const outcome = authOutcome(response(status, 'application/json', '{"error":"nope","n":[1]}'));
      expect(outcome).toMatchObject({ ok: false, status });
      if (outcome.ok) return;
      expect(JSON.parse(outcome.dataJson)).toEqual({ error: 'nope', n: [1] });
    });

    it.each([
      [400, 'text/plain', '{"a":1}'],
      [401, undefined, '{"a":1}'],
      [403, 'application/json', 'not json'],
      [404, 'application/json', ''],
      [410, 'application/json', '{"a":1,}'],
      [500, 'text/html', '<h1>oops</h1>'],
      [503, 'application/json; charset=latin1', '{"a":1}'],
    ])('fails %i with Content-Type %p and body %p with that status and null', (status, contentType, body) => {
      expect(authOutcome(response(status, contentType, body))).toMatchObject({ ok: false, status, dataJson: 'null' });
    });

    it.each([
      [401, '"denied"', 'denied'],
      [403, '[1,2]', [1, 2]],
      [404, 'null', null],
    ])('fails %i with any JSON body, not only objects (%p)', (status, body, data) => {
      const outcome = authOutcome(response(status, 'application/json', body));
      expect(outcome.ok).toBe(false);
      if (!outcome.ok) expect(JSON.parse(outcome.dataJson)).toEqual(data);
    });
  });

  describe('any other status', () => {
    it.each([201, 204, 301, 302, 402, 405, 418, 429, 501, 502, 504])(
      'fails %i with 500 and null, even with a JSON body',
      (status) => {
        expect(authOutcome(response(status, 'application/json', '{"user_id":"u"}'))).toMatchObject({
          ok: false,
          status: 500,
          dataJson: 'null',
          reason: `status ${status}`,
        });
      },
    );
  });

  describe('status 200 with a bad Content-Type', () => {
    it.each([
      undefined,
      '',
      'text/plain',
      'text/json',
      'application/javascript',
      'application/json; charset=iso-8859-1',
      'application/jsonx',
    ])('fails Content-Type %p with 500 and null', (contentType) => {
      expect(authOutcome(response(200, contentType, '{"user_id":"u"}'))).toMatchObject({
        ok: false,
        status: 500,
        dataJson: 'null',
      });
    });
  });

  describe('status 200 with a bad body', () => {
    it.each([
      ['not JSON', 'hello'],
      ['empty', ''],
      ['a trailing comma', '{"user_id":"u",}'],
      ['an array', '[{"user_id":"u"}]'],
      ['a string', '"u"'],
      ['a number', '42'],
      ['null', 'null'],
      ['an empty object', '{}'],
      ['a null user_id', '{"user_id":null}'],
      ['a numeric user_id', '{"user_id":42}'],
      ['an empty user_id', '{"user_id":""}'],
      ['a user_id with a space', '{"user_id":"a b"}'],
      ['a user_id with a dot', '{"user_id":"a.b"}'],
      ['a user_id with a non-ASCII letter', '{"user_id":"é"}'],
      ['a 257-char user_id', JSON.stringify({ user_id: 'u'.repeat(257) })],
      ['a user_id nested elsewhere', '{"user":{"user_id":"u"}}'],
    ])('fails %s with 500 and null', (_case, body) => {
      expect(authOutcome(ok(body))).toMatchObject({ ok: false, status: 500, dataJson: 'null' });
    });

    it('fails a response one byte over 8 KiB with 500 and null, and says why', () => {
      expect(authOutcome(ok(bodyOfBytes(MAX_AUTH_JSON_BYTES + 1)))).toEqual({
        ok: false,
        status: 500,
        dataJson: 'null',
        reason: `response over ${MAX_AUTH_JSON_BYTES} bytes`,
      });
    });

    it.each([
      ['5,000 levels', 5000],
      ['129 levels (the root object is level 1)', 128],
    ])('fails a response nested %s deep with 500 and null, and says why, without throwing', (_case, inner) => {
      const body = `{"user_id":"u","x":${'['.repeat(inner)}${']'.repeat(inner)}}`;
      expect(authOutcome(ok(body))).toEqual({
        ok: false,
        status: 500,
        dataJson: 'null',
        reason: 'response nested deeper than 128 levels',
      });
    });

    it('accepts a response nested exactly 128 levels deep', () => {
      const body = `{"user_id":"u","x":${'['.repeat(127)}${']'.repeat(127)}}`;
      expect(authOutcome(ok(body))).toMatchObject({ ok: true });
    });

    it('counts UTF-8 bytes, not characters, against 8 KiB', () => {
      const body = JSON.stringify({ user_id: 'u', pad: 'é'.repeat(MAX_AUTH_JSON_BYTES / 2) });
      expect(body.length).toBeLessThan(MAX_AUTH_JSON_BYTES + 100);
      expect(authOutcome(ok(body))).toMatchObject({ ok: false, status: 500 });
    });
  });

  describe('transport outcomes', () => {
    it.each<UpstreamResponse>([
      { kind: 'timeout' },
      { kind: 'connection_error', reason: 'ECONNREFUSED' },
      { kind: 'too_large' },
    ])('fails $kind with 500 and null', (failure) => {
      expect(authOutcome(failure)).toMatchObject({ ok: false, status: 500, dataJson: 'null' });
    });

    it('fails a full destination queue with 503 and null', () => {
      expect(authOutcome({ kind: 'queue_full' })).toMatchObject({ ok: false, status: 503, dataJson: 'null' });
    });
  });

  it('gives every failure a reason for the log', () => {
    const failures = [
      authOutcome({ kind: 'timeout' }),
      authOutcome(response(401, undefined, '')),
      authOutcome(ok('{}')),
    ];
    expect(failures.map((f) => (f.ok ? '' : f.reason)).every((reason) => reason.length > 0)).toBe(true);
  });
});

describe(identityOf.name, () => {
  it('prefixes the base64 of the JSON with "Gateway+json "', () => {
    const identity = identityOf('u', '{"user_id":"u"}');
    expect([identity.userId, identity.json, identity.authorization]).toEqual([
      'u',
      '{"user_id":"u"}',
      'Gateway+json eyJ1c2VyX2lkIjoidSJ9',
    ]);
    expect(identity.authorization).toBe('Gateway+json eyJ1c2VyX2lkIjoidSJ9');
  });

  it.each([
    ['{"user_id":"ab"}', 'Gateway+json eyJ1c2VyX2lkIjoiYWIifQ=='],
    ['{"user_id":"abc"}', 'Gateway+json eyJ1c2VyX2lkIjoiYWJjIn0='],
  ])('pads the base64 of %p', (json, authorization) => {
    expect(identityOf('x', json).authorization).toBe(authorization);
  });
});
