import type { IncomingHttpHeaders } from 'node:http';
import type { Handler } from '../config/gateway-config';
import {
  LEGACY_SUBPROTOCOL,
  SUBPROTOCOL,
  chooseSubprotocol,
  decideHandshake,
  hasDuplicateCredentialHeaders,
  isOriginAllowed,
  queryStringOf,
  type HandshakeContext,
} from './handshake';

const ROOT: Handler = {
  name: 'root',
  path: '/',
  messageHandlers: new Map([['*', { destination: 'chat', pathPrefix: '' }]]),
};
const CHAT: Handler = {
  name: 'chat1',
  path: '/chat1',
  messageHandlers: new Map([['*', { destination: 'chat', pathPrefix: '/chat1' }]]),
};

function context(overrides: Partial<HandshakeContext> = {}): HandshakeContext {
  return {
    handlersByPath: new Map([
      [ROOT.path, ROOT],
      [CHAT.path, CHAT],
    ]),
    allowedOrigins: new Set(['https://app.example']),
    connectionCount: 0,
    maxConnections: 10,
    isResumeOffered: true,
    ...overrides,
  };
}

const GOOD: IncomingHttpHeaders = { 'sec-websocket-protocol': SUBPROTOCOL, origin: 'https://app.example' };
const FULL = { connectionCount: 10 };

describe(decideHandshake.name, () => {
  it.each([
    ['/chat1', CHAT],
    ['/chat1?token=abc', CHAT],
    ['/', ROOT],
    ['/?a=1', ROOT],
    [undefined, ROOT],
  ])('accepts url %p on its handler', (url, handler) => {
    expect(decideHandshake(url, GOOD, context())).toEqual({
      ok: true,
      handler,
      protocol: SUBPROTOCOL,
      resume: { kind: 'none' },
    });
  });

  it('echoes the legacy subprotocol when only that one is offered', () => {
    expect(decideHandshake('/chat1', { 'sec-websocket-protocol': LEGACY_SUBPROTOCOL }, context())).toEqual({
      ok: true,
      handler: CHAT,
      protocol: LEGACY_SUBPROTOCOL,
      resume: { kind: 'none' },
    });
  });

  it.each<[string, string, boolean, string]>([
    ['the opt-in beside ours', `${SUBPROTOCOL}, gateway-resume`, true, 'opt-in'],
    [
      'a resume offer',
      `${SUBPROTOCOL}, gateway-resume.${Buffer.from('{"token":"abc"}').toString('base64url')}`,
      true,
      'resume',
    ],
    ['an unreadable offer', `${SUBPROTOCOL}, gateway-resume.%%`, true, 'unreadable'],
    ['the opt-in while resumable sessions are off', `${SUBPROTOCOL}, gateway-resume`, false, 'none'],
  ])('SPEC §12.1: reads %s', (_, protocols, isResumeOffered, kind) => {
    const decision = decideHandshake('/chat1', { 'sec-websocket-protocol': protocols }, context({ isResumeOffered }));
    expect(decision).toMatchObject({ ok: true, protocol: SUBPROTOCOL, resume: { kind } });
  });

  it.each<[string, string | undefined, IncomingHttpHeaders, Partial<HandshakeContext>, number]>([
    ['an unknown path', '/nope', GOOD, {}, 404],
    ['a handler path with a trailing slash', '/chat1/', GOOD, {}, 404],
    ['a sub-path of a handler', '/chat1/x', GOOD, {}, 404],
    [
      'an unknown path, no subprotocol, a full node and a bad origin',
      '/nope',
      { origin: 'https://evil.example' },
      FULL,
      404,
    ],
    ['no subprotocol', '/chat1', { origin: 'https://app.example' }, {}, 400],
    ['an offer without ours', '/chat1', { 'sec-websocket-protocol': 'graphql-ws, v2.gateway-lattice+json' }, {}, 400],
    ['no subprotocol, a full node and a bad origin', '/chat1', { origin: 'https://evil.example' }, FULL, 400],
    ['a full node', '/chat1', GOOD, FULL, 503],
    ['a node over its limit', '/chat1', GOOD, { connectionCount: 11 }, 503],
    ['a full node and a bad origin', '/chat1', { ...GOOD, origin: 'https://evil.example' }, FULL, 503],
    ['an origin not listed', '/chat1', { ...GOOD, origin: 'https://evil.example' }, {}, 403],
    ['an origin that differs only in case', '/chat1', { ...GOOD, origin: 'https://APP.example' }, {}, 403],
    ['an empty origin', '/chat1', { ...GOOD, origin: '' }, {}, 403],
    [
      'a cross-site origin when no allow-list is set (same origin)',
      '/chat1',
      { ...GOOD, host: 'gw.example' },
      { allowedOrigins: null },
      403,
    ],
  ])('refuses %s with %i', (_case, url, headers, overrides, status) => {
    expect(decideHandshake(url, headers, context(overrides))).toMatchObject({ ok: false, status });
  });

  it.each<[string, IncomingHttpHeaders, Partial<HandshakeContext>]>([
    ['no Origin header while an allow-list is set', { 'sec-websocket-protocol': SUBPROTOCOL }, {}],
    ['any origin with "*"', { ...GOOD, origin: 'https://evil.example' }, { allowedOrigins: new Set(['*']) }],
    ['the same origin when no allow-list is set', { ...GOOD, host: 'app.example' }, { allowedOrigins: null }],
    ['no Origin header when no allow-list is set', { 'sec-websocket-protocol': SUBPROTOCOL }, { allowedOrigins: null }],
    ['one connection below the limit', GOOD, { connectionCount: 9 }],
  ])('accepts %s', (_case, headers, overrides) => {
    expect(decideHandshake('/chat1', headers, context(overrides))).toMatchObject({ ok: true });
  });

  it('says which protocol is required in one line', () => {
    const decision = decideHandshake('/chat1', {}, context());
    if (decision.ok) throw new Error('accepted');
    expect(decision.text).toContain(SUBPROTOCOL);
    expect(decision.text).toContain(LEGACY_SUBPROTOCOL);
    expect(decision.text).not.toContain('\n');
  });
});

describe(isOriginAllowed.name, () => {
  it.each<[string, string | undefined, boolean]>([
    ['http://app.test:8080', 'app.test:8080', true],
    ['http://app.test', 'app.test', true],
    ['http://app.test', 'app.test:80', true],
    ['https://app.test', 'app.test:443', true],
    ['https://APP.test', 'app.TEST', true],
    ['http://[::1]:8080', '[::1]:8080', true],
    ['http://app.test:8081', 'app.test:8080', false],
    ['http://app.test', 'app.test:8080', false],
    ['https://app.test', 'app.test:80', false],
    ['http://evil.test:8080', 'app.test:8080', false],
    ['http://app.test.evil.test', 'app.test', false],
    ['null', 'app.test', false],
    ['', 'app.test', false],
    ['http://app.test', undefined, false],
  ])('same origin (unset list): %p with Host %p → %p', (origin, host, expected) => {
    expect(isOriginAllowed(origin, host, null)).toBe(expected);
  });

  it.each<[string, string[], boolean]>([
    ['https://a.test', ['https://a.test'], true],
    ['https://b.test', ['https://a.test'], false],
    ['https://b.test', ['*'], true],
    ['null', ['*'], true],
  ])('listed: %p in %p → %p (the Host header does not matter)', (origin, list, expected) => {
    expect(isOriginAllowed(origin, new URL(origin === 'null' ? 'http://x' : origin).host, new Set(list))).toBe(
      expected,
    );
  });
});

describe(chooseSubprotocol.name, () => {
  it.each([
    [undefined, null],
    ['', null],
    ['graphql-ws', null],
    ['v1.gateway-lattice', null],
    ['v1.gateway-lattice+jsonx', null],
    ['v2.swindon-lattice+json', null],
    [SUBPROTOCOL, SUBPROTOCOL],
    [LEGACY_SUBPROTOCOL, LEGACY_SUBPROTOCOL],
    [`graphql-ws, ${SUBPROTOCOL}`, SUBPROTOCOL],
    [`${LEGACY_SUBPROTOCOL}, ${SUBPROTOCOL}`, SUBPROTOCOL],
    [`${SUBPROTOCOL},${LEGACY_SUBPROTOCOL}`, SUBPROTOCOL],
    [`graphql-ws ,  ${LEGACY_SUBPROTOCOL}  `, LEGACY_SUBPROTOCOL],
  ])('chooses from %p: %p', (header, expected) => {
    expect(chooseSubprotocol(header)).toBe(expected);
  });

  it('names the protocols of SPEC §2', () => {
    expect([SUBPROTOCOL, LEGACY_SUBPROTOCOL]).toEqual(['v1.gateway-lattice+json', 'v1.swindon-lattice+json']);
  });
});

describe(hasDuplicateCredentialHeaders.name, () => {
  it.each<[string, string[], boolean]>([
    ['no headers', [], false],
    ['one Cookie and one Authorization', ['Cookie', 'a=1', 'Authorization', 'Bearer x'], false],
    ['two Cookie headers', ['Cookie', 'a=1', 'Host', 'h', 'Cookie', 'b=2'], true],
    ['two Cookie headers in different case', ['cookie', 'a=1', 'COOKIE', 'b=2'], true],
    ['two Authorization headers', ['Authorization', 'a', 'authorization', 'b'], true],
    ['two identical Authorization headers', ['Authorization', 'a', 'Authorization', 'a'], true],
    ['a header value that reads "cookie"', ['X-Name', 'cookie', 'Cookie', 'a=1'], false],
    ['other repeated headers', ['X-Forwarded-For', 'a', 'X-Forwarded-For', 'b'], false],
    [
      'repeated headers as long as the two',
      ['Pragma', 'a', 'PRAGMA', 'b', 'Cache-Control', 'x', 'cache-control', 'y'],
      false,
    ],
  ])('says %s: %p', (_case, rawHeaders, expected) => {
    expect(hasDuplicateCredentialHeaders(rawHeaders)).toBe(expected);
  });
});

describe(queryStringOf.name, () => {
  it.each([
    [undefined, ''],
    ['/', ''],
    ['/chat1', ''],
    ['/chat1?', ''],
    ['/chat1?token=abc', 'token=abc'],
    ['/?a=1&b=%20x+y', 'a=1&b=%20x+y'],
    ['/p?x=1?y=2', 'x=1?y=2'],
  ])('gives %p the raw query %p', (url, query) => {
    expect(queryStringOf(url)).toBe(query);
  });
});
