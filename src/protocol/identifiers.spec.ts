import {
  RESERVED_METHOD_PREFIX,
  RESERVED_NAMESPACE_PREFIX,
  isMethodName,
  isValidLatticeKey,
  isValidMethod,
  isValidNamespace,
  isValidRequestId,
  isValidTopic,
  isValidUserId,
  isWellFormedConnectionId,
  methodToPath,
  pathToWire,
} from './identifiers';

describe(isValidMethod.name, () => {
  it.each([
    ['a single word', 'ping'],
    ['a dotted name', 'rooms.history'],
    ['a deep dotted name', 'a.b.c.d.e'],
    ['digits, dashes and underscores', 'chat_v2.get-9'],
    ['a name that only starts with the word gateway', 'gateway'],
    ['a segment that starts with gateway but is longer', 'gatewayx.call'],
    ['a name with gateway in a later segment', 'rooms.gateway.x'],
  ])('accepts %s', (_case, method) => {
    expect(isValidMethod(method)).toBe(true);
  });

  it.each([
    ['the empty string', ''],
    ['a leading dot', '.a'],
    ['a trailing dot', 'a.'],
    ['two dots in a row', 'a..b'],
    ['a slash', 'a/b'],
    ['a space', 'a b'],
    ['a colon', 'a:b'],
    ['a non-ASCII letter', 'café'],
    ['a trailing newline', 'a\n'],
    ['the reserved prefix', 'gateway.authorize_connection'],
    ['any method under the reserved prefix', 'gateway.x.y'],
    ['the reserved prefix capitalised', 'Gateway.authorize_connection'],
    ['the reserved prefix in capitals', 'GATEWAY.session_inactive'],
    ['the reserved prefix in mixed case', 'gAtEwAy.x'],
  ])('rejects %s', (_case, method) => {
    expect(isValidMethod(method)).toBe(false);
  });
});

describe(isMethodName.name, () => {
  it.each(['gateway.authorize_connection', 'gateway.session_inactive', 'rooms.history', 'x'])(
    'accepts %p, reserved names included',
    (name) => {
      expect(isMethodName(name)).toBe(true);
    },
  );

  it.each(['', '*', 'a.*', 'a..b', '.a', 'a.'])('rejects %p', (name) => {
    expect(isMethodName(name)).toBe(false);
  });
});

describe(isValidRequestId.name, () => {
  it.each([
    ['zero', 0],
    ['a positive integer', 42],
    ['the largest safe integer', Number.MAX_SAFE_INTEGER],
    ['a one-char string', 'a'],
    ['a 36-char string', 'x'.repeat(36)],
    ['a uuid-like string', '123e4567-e89b-12d3-a456-426614174000'],
    ['a string with underscore', 'req_1'],
  ])('accepts %s', (_case, value) => {
    expect(isValidRequestId(value)).toBe(true);
  });

  it.each([
    ['undefined', undefined],
    ['null', null],
    ['a negative integer', -1],
    ['a fraction', 1.5],
    ['an unsafe integer', Number.MAX_SAFE_INTEGER + 1],
    ['infinity', Infinity],
    ['NaN', NaN],
    ['the empty string', ''],
    ['a 37-char string', 'x'.repeat(37)],
    ['a string with a dot', 'a.b'],
    ['a string with a space', 'a b'],
    ['a boolean', true],
    ['an array', [1]],
    ['an object', { id: 1 }],
    ['a bigint', BigInt(1)],
  ])('rejects %s', (_case, value) => {
    expect(isValidRequestId(value)).toBe(false);
  });
});

describe(isValidTopic.name, () => {
  it.each(['a', 'chat/room-1', 'user:42/inbox', 'a_b/c-d/e:f', 't'.repeat(256), 'a/'.repeat(127) + 'bc'])(
    'accepts %p',
    (topic) => {
      expect(isValidTopic(topic)).toBe(true);
    },
  );

  it.each(['', '/a', 'a/', 'a//b', 'a.b', 'a b', 'ä', 't'.repeat(257), 't'.repeat(5000)])('rejects %p', (topic) => {
    expect(isValidTopic(topic)).toBe(false);
  });
});

describe(isValidNamespace.name, () => {
  it.each(['a', 'chat/rooms', 'a_b/c-d', 'n'.repeat(256)])('accepts %p', (ns) => {
    expect(isValidNamespace(ns)).toBe(true);
  });

  it.each(['', '/a', 'a/', 'a//b', 'a:b', 'a.b', 'a b', 'n'.repeat(257)])('rejects %p', (ns) => {
    expect(isValidNamespace(ns)).toBe(false);
  });
});

describe(isValidUserId.name, () => {
  it.each([
    ['one char', 'u'],
    ['256 chars', 'u'.repeat(256)],
    ['every allowed symbol', 'aZ09:_/-'],
  ])('accepts %s', (_case, value) => {
    expect(isValidUserId(value)).toBe(true);
  });

  it.each([
    ['the empty string', ''],
    ['257 chars', 'u'.repeat(257)],
    ['a dot', 'a.b'],
    ['a space', 'a b'],
    ['a non-ASCII letter', 'é'],
    ['a number', 42],
    ['null', null],
    ['undefined', undefined],
  ])('rejects %s', (_case, value) => {
    expect(isValidUserId(value)).toBe(false);
  });
});

describe(isWellFormedConnectionId.name, () => {
  it.each(['a', 'node1-AbC_9-', 'x'.repeat(64)])('accepts %p', (cid) => {
    expect(isWellFormedConnectionId(cid)).toBe(true);
  });

  it.each(['', 'x'.repeat(65), 'a.b', 'a/b', 'a b', 'a+b'])('rejects %p', (cid) => {
    expect(isWellFormedConnectionId(cid)).toBe(false);
  });
});

describe(isValidLatticeKey.name, () => {
  it.each(['k', 'room.1:a_b-c', 'k'.repeat(256)])('accepts %p', (key) => {
    expect(isValidLatticeKey(key)).toBe(true);
  });

  it.each(['', 'k'.repeat(257), 'a/b', 'a b', 'é'])('rejects %p', (key) => {
    expect(isValidLatticeKey(key)).toBe(false);
  });
});

describe(pathToWire.name, () => {
  it.each([
    ['a', 'a'],
    ['a/b', 'a.b'],
    ['chat/rooms/1', 'chat.rooms.1'],
  ])('turns %p into %p', (path, wire) => {
    expect(pathToWire(path)).toBe(wire);
  });
});

describe(methodToPath.name, () => {
  it.each([
    ['ping', '/ping'],
    ['rooms.history', '/rooms/history'],
    ['gateway.authorize_connection', '/gateway/authorize_connection'],
    ['a.b.c', '/a/b/c'],
  ])('turns %p into %p', (method, path) => {
    expect(methodToPath(method)).toBe(path);
  });
});

describe('reserved prefixes', () => {
  it('reserve gateway. for methods and gateway/ for namespaces', () => {
    expect([RESERVED_METHOD_PREFIX, RESERVED_NAMESPACE_PREFIX]).toEqual(['gateway.', 'gateway/']);
  });
});
