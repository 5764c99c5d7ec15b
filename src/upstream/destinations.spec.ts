import type { Destination, Handler, RouteTarget } from '../config/gateway-config';
import { AUTHORIZE_METHOD, RouteTable, SESSION_INACTIVE_METHOD } from './destinations';

function destination(name: string, url: string): Destination {
  return {
    name,
    url,
    timeoutMs: 30_000,
    maxSockets: 100,
    queueLimit: 100_000,
    requestIdHeader: null,
    overrideHostHeader: null,
  };
}

const DESTINATIONS = new Map<string, Destination>([
  ['chat', destination('chat', 'http://chat:8000')],
  ['auth', destination('auth', 'http://auth:8000/api')],
  ['rooms', destination('rooms', 'http://rooms:8000')],
  ['deep', destination('deep', 'http://deep:8000')],
]);

function handler(patterns: Record<string, RouteTarget>): Handler {
  return { name: 'chat1', path: '/chat1', messageHandlers: new Map(Object.entries(patterns)) };
}

describe(RouteTable.name, () => {
  let sut: RouteTable;

  beforeEach(() => {
    sut = new RouteTable(
      handler({
        '*': { destination: 'chat', pathPrefix: '' },
        'gateway.*': { destination: 'auth', pathPrefix: '/chat1' },
        'rooms.*': { destination: 'rooms', pathPrefix: '/v2' },
        'rooms.admin.*': { destination: 'deep', pathPrefix: '' },
        'rooms.history': { destination: 'chat', pathPrefix: '/v1' },
        'rooms.admin.kick': { destination: 'chat', pathPrefix: '/exact' },
      }),
      DESTINATIONS,
    );
  });

  it.each([
    ['an unmatched name goes to "*"', 'ping', 'chat', 'http://chat:8000/ping'],
    ['a dotted unmatched name goes to "*"', 'users.get', 'chat', 'http://chat:8000/users/get'],
    ['an exact name beats every glob', 'rooms.history', 'chat', 'http://chat:8000/v1/rooms/history'],
    ['an exact name beats a longer glob', 'rooms.admin.kick', 'chat', 'http://chat:8000/exact/rooms/admin/kick'],
    ['a name under a glob goes there', 'rooms.list', 'rooms', 'http://rooms:8000/v2/rooms/list'],
    ['a deeper name still matches the glob', 'rooms.list.all', 'rooms', 'http://rooms:8000/v2/rooms/list/all'],
    ['the longest glob wins', 'rooms.admin.ban', 'deep', 'http://deep:8000/rooms/admin/ban'],
    ['the longest glob matches deeper names', 'rooms.admin.ban.user', 'deep', 'http://deep:8000/rooms/admin/ban/user'],
    ['the bare glob prefix is not matched by its glob', 'rooms', 'chat', 'http://chat:8000/rooms'],
    ['the bare longer prefix falls to the shorter glob', 'rooms.admin', 'rooms', 'http://rooms:8000/v2/rooms/admin'],
    ['a name sharing letters but not the dot misses the glob', 'roomsx.list', 'chat', 'http://chat:8000/roomsx/list'],
    [
      'the auth method follows gateway.*',
      AUTHORIZE_METHOD,
      'auth',
      'http://auth:8000/api/chat1/gateway/authorize_connection',
    ],
    [
      'the inactivity method follows gateway.*',
      SESSION_INACTIVE_METHOD,
      'auth',
      'http://auth:8000/api/chat1/gateway/session_inactive',
    ],
  ])('%s', (_case, method, destinationName, url) => {
    const route = sut.route(method);
    expect(route.destination).toBe(DESTINATIONS.get(destinationName));
    expect(route.url).toBe(url);
  });

  it('routes the same method the same way twice, and methods beyond the remembered ones too', () => {
    const methods = Array.from({ length: 3000 }, (_, i) => (i % 2 === 0 ? `rooms.m${i}` : `m${i}`));
    const first = methods.map((m) => sut.route(m).url);
    expect(methods.map((m) => sut.route(m).url)).toEqual(first);
    expect(first[2998]).toBe('http://rooms:8000/v2/rooms/m2998');
    expect(first[2999]).toBe('http://chat:8000/m2999');
  });

  it('routes gateway.* methods to "*" when no gateway glob exists', () => {
    sut = new RouteTable(handler({ '*': { destination: 'auth', pathPrefix: '' } }), DESTINATIONS);
    expect(sut.route(AUTHORIZE_METHOD).url).toBe('http://auth:8000/api/gateway/authorize_connection');
  });

  it('routes by an exact gateway method name before gateway.*', () => {
    sut = new RouteTable(
      handler({
        '*': { destination: 'chat', pathPrefix: '' },
        'gateway.*': { destination: 'auth', pathPrefix: '' },
        [SESSION_INACTIVE_METHOD]: { destination: 'rooms', pathPrefix: '/idle' },
      }),
      DESTINATIONS,
    );
    expect([sut.route(SESSION_INACTIVE_METHOD).url, sut.route(AUTHORIZE_METHOD).url]).toEqual([
      'http://rooms:8000/idle/gateway/session_inactive',
      'http://auth:8000/api/gateway/authorize_connection',
    ]);
  });

  it('picks the longest glob whatever the order of the patterns', () => {
    sut = new RouteTable(
      handler({
        'a.b.c.*': { destination: 'deep', pathPrefix: '' },
        'a.*': { destination: 'rooms', pathPrefix: '' },
        '*': { destination: 'chat', pathPrefix: '' },
        'a.b.*': { destination: 'auth', pathPrefix: '' },
      }),
      DESTINATIONS,
    );
    expect(['a.x', 'a.b.x', 'a.b.c.x', 'a.b.c'].map((m) => sut.route(m).destination.name)).toEqual([
      'rooms',
      'auth',
      'deep',
      'auth',
    ]);
  });

  it('refuses a handler without "*"', () => {
    expect(() => new RouteTable(handler({ 'a.*': { destination: 'chat', pathPrefix: '' } }), DESTINATIONS)).toThrow(
      'handler chat1: no "*" pattern',
    );
  });

  it('refuses a pattern naming an unknown destination', () => {
    expect(() => new RouteTable(handler({ '*': { destination: 'nowhere', pathPrefix: '' } }), DESTINATIONS)).toThrow(
      'handler chat1: unknown destination nowhere',
    );
  });
});

describe('gateway method names', () => {
  it('are gateway.authorize_connection and gateway.session_inactive', () => {
    expect([AUTHORIZE_METHOD, SESSION_INACTIVE_METHOD]).toEqual([
      'gateway.authorize_connection',
      'gateway.session_inactive',
    ]);
  });
});
