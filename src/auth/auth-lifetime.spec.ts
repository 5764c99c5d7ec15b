import type { AuthLifetimeSettings } from '../config/gateway-config';
import { UpstreamResponse } from '../upstream/upstream-response';
import {
  ANOTHER_USER_STATUS,
  lifetimeMsOf,
  livedAuthOutcome,
  parseAuthTtl,
  refreshDelayMs,
  refreshOutcome,
  retryDelayMs,
} from './auth-lifetime';

const NO_DEFAULTS: AuthLifetimeSettings = { defaultTtlMs: 0, maxTtlMs: 0, graceMs: 30_000 };

function answer(json: unknown, ttl?: string | string[], status = 200): UpstreamResponse {
  const headers = ttl === undefined ? {} : { 'gateway-auth-ttl': ttl };
  const body = Buffer.from(JSON.stringify(json), 'utf8');
  return { kind: 'response', status, contentType: 'application/json', body, headers };
}

describe(parseAuthTtl.name, () => {
  it.each([
    ['1', 1],
    ['60', 60],
    ['31536000', 31_536_000],
    [' 900 ', 900],
    ['007', 7],
  ])('reads %j as %d seconds', (text, seconds) => {
    expect(parseAuthTtl(text)).toEqual({ ok: true, seconds });
  });

  it('reads an absent header as no lifetime of its own', () => {
    expect(parseAuthTtl(undefined)).toEqual({ ok: true, seconds: null });
  });

  it.each(['0', '31536001', '-5', '+5', '1.5', '1e3', '', ' ', '60s', '6 0', '999999999', 'abc'])(
    'rejects %j',
    (text) => {
      expect(parseAuthTtl(text)).toEqual({
        ok: false,
        reason: 'Gateway-Auth-TTL is not a whole number of seconds from 1 to 31536000',
      });
    },
  );

  it('rejects the header sent twice', () => {
    expect(parseAuthTtl(['60', '60']).ok).toBe(false);
  });
});

describe(lifetimeMsOf.name, () => {
  it.each([
    [null, { defaultTtlMs: 0, maxTtlMs: 0 }, 0],
    [null, { defaultTtlMs: 60_000, maxTtlMs: 0 }, 60_000],
    [30, { defaultTtlMs: 60_000, maxTtlMs: 0 }, 30_000],
    [3600, { defaultTtlMs: 0, maxTtlMs: 600_000 }, 600_000],
    [null, { defaultTtlMs: 0, maxTtlMs: 600_000 }, 600_000],
    [null, { defaultTtlMs: 900_000, maxTtlMs: 600_000 }, 600_000],
    [5, { defaultTtlMs: 0, maxTtlMs: 600_000 }, 5000],
  ])('header %p with %p gives %d ms', (seconds, settings, expected) => {
    expect(lifetimeMsOf(seconds, { ...settings, graceMs: 0 })).toBe(expected);
  });
});

describe(refreshDelayMs.name, () => {
  it.each([
    [0, 85_000],
    [0.5, 90_000],
    [0.999_999, 95_000],
  ])('spreads a 100 s lifetime over 90%% ±5%% (random %p → %d ms)', (random, expected) => {
    expect(refreshDelayMs(100_000, random)).toBe(expected);
  });
});

describe(retryDelayMs.name, () => {
  it.each([
    [1, 500],
    [2, 1000],
    [3, 2000],
    [5, 8000],
    [6, 10_000],
    [60, 10_000],
  ])('waits before retry %d %d ms', (attempt, expected) => {
    expect(retryDelayMs(attempt)).toBe(expected);
  });
});

describe(livedAuthOutcome.name, () => {
  it('gives a valid answer the lifetime of its header', () => {
    const outcome = livedAuthOutcome(answer({ user_id: 'u1' }, '60'), NO_DEFAULTS);
    expect(outcome).toMatchObject({ ok: true, lifetimeMs: 60_000 });
  });

  it('makes a valid answer with an invalid header invalid (S=500, data null)', () => {
    expect(livedAuthOutcome(answer({ user_id: 'u1' }, '0'), NO_DEFAULTS)).toEqual({
      ok: false,
      status: 500,
      dataJson: 'null',
      reason: 'Gateway-Auth-TTL is not a whole number of seconds from 1 to 31536000',
    });
  });

  it('leaves a failed answer as it is, whatever its header', () => {
    expect(livedAuthOutcome(answer({ e: 1 }, 'junk', 401), NO_DEFAULTS)).toMatchObject({ ok: false, status: 401 });
  });
});

describe(refreshOutcome.name, () => {
  const current = JSON.stringify({ user_id: 'u1', role: 'a' });

  it('is ok for the same object, with its own lifetime', () => {
    expect(refreshOutcome(answer({ user_id: 'u1', role: 'a' }, '30'), 'u1', current, NO_DEFAULTS)).toEqual({
      kind: 'ok',
      lifetimeMs: 30_000,
    });
  });

  it('is changed for another object of the same user', () => {
    expect(refreshOutcome(answer({ user_id: 'u1', role: 'b' }, '30'), 'u1', current, NO_DEFAULTS)).toEqual({
      kind: 'changed',
      lifetimeMs: 30_000,
      identityJson: '{"user_id":"u1","role":"b"}',
    });
  });

  it.each([401, 403, 404, 410])('is refused on %d, with its JSON body as data', (status) => {
    expect(refreshOutcome(answer({ why: 'gone' }, undefined, status), 'u1', current, NO_DEFAULTS)).toEqual({
      kind: 'refused',
      status,
      dataJson: '{"why":"gone"}',
      reason: 'refused',
    });
  });

  it('is refused for a valid object of another user', () => {
    expect(refreshOutcome(answer({ user_id: 'u2' }), 'u1', current, NO_DEFAULTS)).toMatchObject({
      kind: 'refused',
      status: ANOTHER_USER_STATUS,
      dataJson: 'null',
    });
  });

  it.each<[string, UpstreamResponse]>([
    ['a 500', answer({}, undefined, 500)],
    ['a 400', answer({}, undefined, 400)],
    ['a timeout', { kind: 'timeout' }],
    ['a full queue', { kind: 'queue_full' }],
    [
      'a body that is not JSON',
      { kind: 'response', status: 200, contentType: 'application/json', body: Buffer.from('{') },
    ],
    ['an object without user_id', answer({ name: 'x' })],
    ['a bad Gateway-Auth-TTL', answer({ user_id: 'u1' }, 'forever')],
    ['an object nested 200 deep', answer(JSON.parse('{"user_id":"u1","x":' + '['.repeat(200) + ']'.repeat(200) + '}'))],
    ['an object over 8 KiB', answer({ user_id: 'u1', pad: 'x'.repeat(9000) })],
  ])('fails (to be retried) on %s', (_, response) => {
    expect(refreshOutcome(response, 'u1', current, NO_DEFAULTS).kind).toBe('failed');
  });
});
