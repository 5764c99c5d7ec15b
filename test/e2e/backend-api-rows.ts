/**
 * The SPEC §5 request rows of the backend API (seed §4.2–4.4, §7), shared by
 * the validation spec (each request alone) and the batch spec (the same
 * requests as batch commands).
 */

export type Method = 'GET' | 'HEAD' | 'POST' | 'PUT' | 'DELETE' | 'PATCH';

/** A path built from the real connection id of the test's client. */
export type PathOf = (cid: string) => string;

export const KIB = 1024;
export const OVERSIZED = JSON.stringify({ text: 'x'.repeat(2 * KIB) });

/**
 * The nine endpoints and the two of SPEC §12.6 (10, 11), each with a body it
 * accepts (undefined: none). 10 and 11 name a connection and a user other than
 * the spec's own client, which the later rows still use.
 */
export const ENDPOINTS: ReadonlyArray<{ n: number; method: Method; path: PathOf; body?: unknown }> = [
  { n: 1, method: 'PUT', path: (cid) => `/v1/connection/${cid}/subscriptions/room/1` },
  { n: 3, method: 'POST', path: () => '/v1/publish/room/1', body: { text: 'hi' } },
  { n: 2, method: 'DELETE', path: (cid) => `/v1/connection/${cid}/subscriptions/room/1` },
  {
    n: 4,
    method: 'PUT',
    path: (cid) => `/v1/connection/${cid}/lattices/ns/1`,
    body: { shared: { k: { n_counter: 1 } }, private: { u1: { k: {} } } },
  },
  { n: 6, method: 'POST', path: () => '/v1/lattice/ns/1', body: { shared: { k: { n_counter: 2 } } } },
  { n: 5, method: 'DELETE', path: (cid) => `/v1/connection/${cid}/lattices/ns/1` },
  { n: 7, method: 'PUT', path: (cid) => `/v1/connection/${cid}/users`, body: ['u2', 'team:a/b-c_d'] },
  { n: 8, method: 'PUT', path: () => '/v1/user/u1/users', body: ['u3'] },
  { n: 9, method: 'DELETE', path: (cid) => `/v1/connection/${cid}/users` },
  { n: 10, method: 'DELETE', path: () => '/v1/connection/Zz_other-conn' },
  { n: 11, method: 'DELETE', path: () => '/v1/user/u9/connections' },
];

/** A body each method+path accepts, so that a 404 can only come from the path or the method. */
export function acceptedBody(method: string, path: string): unknown {
  if (method !== 'PUT' && method !== 'POST' && method !== 'PATCH') return undefined;
  return path.endsWith('/users') ? ['u2'] : {};
}

export const WELL_FORMED_UNKNOWN_ROWS: ReadonlyArray<[string, Method, string, unknown]> = [
  ['a well-formed unknown cid on endpoint 1', 'PUT', '/v1/connection/Zz_unknown-cid/subscriptions/t', undefined],
  ['a well-formed unknown cid on endpoint 2', 'DELETE', '/v1/connection/Zz_unknown-cid/subscriptions/t', undefined],
  ['a well-formed unknown cid on endpoint 4', 'PUT', '/v1/connection/Zz_unknown-cid/lattices/ns', {}],
  ['a well-formed unknown cid on endpoint 5', 'DELETE', '/v1/connection/Zz_unknown-cid/lattices/ns', undefined],
  ['a well-formed unknown cid on endpoint 7', 'PUT', '/v1/connection/Zz_unknown-cid/users', ['u1']],
  ['a well-formed unknown cid on endpoint 9', 'DELETE', '/v1/connection/Zz_unknown-cid/users', undefined],
  ['a 64-character cid', 'PUT', `/v1/connection/${'a'.repeat(64)}/subscriptions/t`, undefined],
  ['an unknown user on endpoint 8', 'PUT', '/v1/user/nobody:here/users', ['u1']],
  ['a well-formed unknown cid on endpoint 10', 'DELETE', '/v1/connection/Zz_unknown-cid', undefined],
  ['an unknown user on endpoint 11', 'DELETE', '/v1/user/nobody:here/connections', undefined],
  ['a topic nobody subscribed to', 'POST', '/v1/publish/nobody/listens', 1],
  ['a namespace nobody subscribed to', 'POST', '/v1/lattice/empty_ns', {}],
  ['the namespace `gateway` without a slash', 'POST', '/v1/lattice/gateway', {}],
];

export const NOT_FOUND_PATHS: ReadonlyArray<[string, PathOf]> = [
  ['empty', () => ''],
  ['/', () => '/'],
  ['/vvvv', () => '/vvvv'],
  ['/v1', () => '/v1'],
  ['/v1/', () => '/v1/'],
  ['/v1/connection', () => '/v1/connection'],
  ['/v1/connection/', () => '/v1/connection/'],
  ['/v1/connection/<cid>/', (cid) => `/v1/connection/${cid}/`],
  ['/v1/connection/<cid>/invalid-method', (cid) => `/v1/connection/${cid}/invalid-method`],
  ['/v1/connection/<cid>/subscriptions', (cid) => `/v1/connection/${cid}/subscriptions`],
  ['/v1/connection/<cid>/subscriptions/', (cid) => `/v1/connection/${cid}/subscriptions/`],
  ['/v1/connection/<cid>/subscriptions/some.topic', (cid) => `/v1/connection/${cid}/subscriptions/some.topic`],
  ['/v1/connection/<cid>/subscriptions/a//b', (cid) => `/v1/connection/${cid}/subscriptions/a//b`],
  ['/v1/connection/<cid>/subscriptions/a/', (cid) => `/v1/connection/${cid}/subscriptions/a/`],
  ['/v1/connection/<cid>/lattices', (cid) => `/v1/connection/${cid}/lattices`],
  ['/v1/connection/<cid>/lattices/', (cid) => `/v1/connection/${cid}/lattices/`],
  ['/v1/connection/<cid>/lattices/invalid.namespace', (cid) => `/v1/connection/${cid}/lattices/invalid.namespace`],
  ['/v1/connection/<cid>/lattices/a:b (no colon in namespaces)', (cid) => `/v1/connection/${cid}/lattices/a:b`],
  ['/v1/connection/<cid>/users/', (cid) => `/v1/connection/${cid}/users/`],
  ['/v1/connection/<cid>/users/extra', (cid) => `/v1/connection/${cid}/users/extra`],
  ['/v1/publish', () => '/v1/publish'],
  ['/v1/publish/', () => '/v1/publish/'],
  ['/v1/publish/invalid.topic', () => '/v1/publish/invalid.topic'],
  ['/v1/publish/a,b', () => '/v1/publish/a,b'],
  ['/v1/publish/a%20b', () => '/v1/publish/a%20b'],
  ['/v1/publish/a%2Eb', () => '/v1/publish/a%2Eb'],
  ['/v1/publish/caf%C3%A9', () => '/v1/publish/caf%C3%A9'],
  ['/v1/lattice', () => '/v1/lattice'],
  ['/v1/lattice/', () => '/v1/lattice/'],
  ['/v1/lattice/invalid.namespace', () => '/v1/lattice/invalid.namespace'],
  ['/v1/user', () => '/v1/user'],
  ['/v1/user/u1', () => '/v1/user/u1'],
  ['/v1/user/u1/users/', () => '/v1/user/u1/users/'],
  ['/v1/user/a.b/users', () => '/v1/user/a.b/users'],
  ['/v1/user/u1/connections/', () => '/v1/user/u1/connections/'],
  ['/v1/user/a.b/connections', () => '/v1/user/a.b/connections'],
  ['/v1/user//connections', () => '/v1/user//connections'],
  ['/v2/publish/a', () => '/v2/publish/a'],
];

export const MALFORMED_CIDS: ReadonlyArray<[string, string]> = [
  ['65 characters', 'a'.repeat(65)],
  ['a dot', 'a.b'],
  ['an escaped space', 'a%20b'],
  ['a colon', 'a:b'],
  ['a comma', 'a,b'],
];

export const CID_ENDPOINTS: ReadonlyArray<[number, Method, (cid: string) => string]> = [
  [1, 'PUT', (c) => `/v1/connection/${c}/subscriptions/t`],
  [2, 'DELETE', (c) => `/v1/connection/${c}/subscriptions/t`],
  [4, 'PUT', (c) => `/v1/connection/${c}/lattices/ns`],
  [5, 'DELETE', (c) => `/v1/connection/${c}/lattices/ns`],
  [7, 'PUT', (c) => `/v1/connection/${c}/users`],
  [9, 'DELETE', (c) => `/v1/connection/${c}/users`],
  [10, 'DELETE', (c) => `/v1/connection/${c}`],
];

export const UNSUPPORTED_METHOD_ROUTES: ReadonlyArray<[string, PathOf, Method[]]> = [
  [
    '/v1/connection/<cid>/subscriptions/t',
    (c) => `/v1/connection/${c}/subscriptions/t`,
    ['GET', 'HEAD', 'POST', 'PATCH'],
  ],
  ['/v1/publish/t', () => '/v1/publish/t', ['GET', 'HEAD', 'PUT', 'DELETE', 'PATCH']],
  ['/v1/connection/<cid>/lattices/ns', (c) => `/v1/connection/${c}/lattices/ns`, ['GET', 'HEAD', 'POST', 'PATCH']],
  ['/v1/lattice/ns', () => '/v1/lattice/ns', ['GET', 'HEAD', 'PUT', 'DELETE', 'PATCH']],
  ['/v1/connection/<cid>/users', (c) => `/v1/connection/${c}/users`, ['GET', 'HEAD', 'POST', 'PATCH']],
  ['/v1/user/u1/users', () => '/v1/user/u1/users', ['GET', 'HEAD', 'POST', 'DELETE', 'PATCH']],
  // GET (and HEAD, as HTTP has it) are the SPEC §15.2 queries on these two.
  ['/v1/connection/<cid>', (c) => `/v1/connection/${c}`, ['POST', 'PUT', 'PATCH']],
  ['/v1/user/u1/connections', () => '/v1/user/u1/connections', ['POST', 'PUT', 'PATCH']],
  ['/v1/topic/t', () => '/v1/topic/t', ['POST', 'PUT', 'DELETE', 'PATCH']],
  ['/v1/info', () => '/v1/info', ['POST', 'PUT', 'DELETE', 'PATCH']],
];

export const RESERVED_NAMESPACE_ROWS: ReadonlyArray<[number, Method, PathOf, unknown]> = [
  [4, 'PUT', (c: string) => `/v1/connection/${c}/lattices/gateway/x`, {}],
  [4, 'PUT', (c: string) => `/v1/connection/${c}/lattices/gateway/user`, {}],
  [5, 'DELETE', (c: string) => `/v1/connection/${c}/lattices/gateway/x`, undefined],
  [5, 'DELETE', (c: string) => `/v1/connection/${c}/lattices/gateway/user`, undefined],
  [6, 'POST', () => '/v1/lattice/gateway/x', {}],
  [6, 'POST', () => '/v1/lattice/gateway/user', { shared: { k: { n_counter: 1 } } }],
];

export const NO_BODY_ENDPOINTS: ReadonlyArray<[number, Method, PathOf]> = [
  [1, 'PUT', (c: string) => `/v1/connection/${c}/subscriptions/t`],
  [2, 'DELETE', (c: string) => `/v1/connection/${c}/subscriptions/t`],
  [5, 'DELETE', (c: string) => `/v1/connection/${c}/lattices/ns`],
  [9, 'DELETE', (c: string) => `/v1/connection/${c}/users`],
  [10, 'DELETE', (c: string) => `/v1/connection/${c}`],
  [11, 'DELETE', () => '/v1/user/u1/connections'],
];

export const BODY_ENDPOINTS: ReadonlyArray<[number, Method, PathOf]> = [
  [3, 'POST', () => '/v1/publish/t'],
  [4, 'PUT', (c) => `/v1/connection/${c}/lattices/ns`],
  [6, 'POST', () => '/v1/lattice/ns'],
  [7, 'PUT', (c) => `/v1/connection/${c}/users`],
  [8, 'PUT', () => '/v1/user/u1/users'],
];

export const INVALID_LATTICE_ROWS: ReadonlyArray<[string, unknown]> = [
  ['an array', []],
  ['a string', 'x'],
  ['null', null],
  ['shared not an object', { shared: [] }],
  ['private not an object', { private: 'u1' }],
  ['a key outside the key set', { shared: { 'a b': {} } }],
  ['a variable without a known suffix', { shared: { k: { n: 1 } } }],
  ['a bad variable suffix', { shared: { k: { n_count: 1 } } }],
  ['a variable name starting with a digit', { shared: { k: { '1n_counter': 1 } } }],
  ['a negative counter', { shared: { k: { n_counter: -1 } } }],
  ['a fractional counter', { shared: { k: { n_counter: 1.5 } } }],
  ['an unsafe counter', { shared: { k: { n_counter: 2 ** 53 } } }],
  ['a set that is not an array of strings', { shared: { k: { s_set: [1] } } }],
  ['a register that is not a pair', { shared: { k: { r_register: 1 } } }],
  ['a register with a negative version', { shared: { k: { r_register: [-1, 'x'] } } }],
  ['expires_in under shared', { shared: { k: { expires_in: '10s' } } }],
  ['a non-string expires_in', { private: { u1: { k: { expires_in: 10 } } } }],
  ['an unparsable expires_in', { private: { u1: { k: { expires_in: 'soon' } } } }],
  ['a private user id outside the set', { private: { 'a.b': { k: {} } } }],
  ['a private entry that is not an object', { private: { u1: { k: 1 } } }],
];

export const INVALID_USERS_ROWS: ReadonlyArray<[string, unknown]> = [
  ['an object', {}],
  ['a string', 'u1'],
  ['null', null],
  ['a number in the array', ['u1', 2]],
  ['"a.b" in the array', ['u1', 'a.b']],
  ['an empty string in the array', ['']],
  ['a 257-character user id', ['u'.repeat(257)]],
  ['a nested array', [['u1']]],
];
