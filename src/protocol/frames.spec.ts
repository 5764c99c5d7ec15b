import {
  encodeCallFault,
  encodeError,
  encodeFatalError,
  encodeHello,
  encodeLattice,
  encodeMessage,
  encodeResult,
  encodeResumeMeta,
  messageFrameHead,
} from './frames';

describe(encodeHello.name, () => {
  it('splices the authorization JSON as the third element', () => {
    expect(JSON.parse(encodeHello('{"user_id":"u","extra":[1]}'))).toEqual(['hello', {}, { user_id: 'u', extra: [1] }]);
  });
});

describe(encodeResumeMeta.name, () => {
  it.each<[string, [resumed?: boolean, lost?: string[], replayed?: number], string]>([
    ['a new session (12.1)', [], '{"resume":{"token":"T","window":30}}'],
    ['a failed resume', [false], '{"resume":{"token":"T","window":30},"resumed":false}'],
    ['a resume (12.3)', [true, ['a.b']], '{"resume":{"token":"T","window":30},"resumed":true,"lost":["a.b"]}'],
    [
      'a resume whose offer asked for the count',
      [true, [], 4],
      '{"resume":{"token":"T","window":30},"resumed":true,"lost":[],"replayed":4}',
    ],
  ])('encodes %s', (_case, rest, expected) => {
    expect(encodeResumeMeta('T', 30, ...rest)).toBe(expected);
  });
});

describe(encodeFatalError.name, () => {
  it.each([
    [
      'with an http status',
      'http_error',
      'null',
      401,
      ['fatal_error', { error_kind: 'http_error', http_error: 401 }, null],
    ],
    [
      'with JSON data',
      'http_error',
      '{"why":"no"}',
      403,
      ['fatal_error', { error_kind: 'http_error', http_error: 403 }, { why: 'no' }],
    ],
    [
      'without an http status',
      'validation_error',
      '"invalid JSON"',
      undefined,
      ['fatal_error', { error_kind: 'validation_error' }, 'invalid JSON'],
    ],
  ] as const)('encodes a fatal error %s', (_case, kind, data, status, expected) => {
    expect(JSON.parse(encodeFatalError(kind, data, status))).toEqual(expected);
  });
});

describe(encodeResult.name, () => {
  it('echoes the meta and splices the body text unchanged', () => {
    const frame = encodeResult({ request_id: 7, x: 'y' }, ' [1, {"a" : 2}] ');
    expect(frame).toBe('["result",{"request_id":7,"x":"y"}, [1, {"a" : 2}] ]');
    expect(JSON.parse(frame)).toEqual(['result', { request_id: 7, x: 'y' }, [1, { a: 2 }]]);
  });
});

describe(encodeError.name, () => {
  it.each([
    [
      'adds error_kind and http_error to the meta',
      { request_id: 1, keep: 'me' },
      'http_error',
      'null',
      404,
      ['error', { request_id: 1, keep: 'me', error_kind: 'http_error', http_error: 404 }, null],
    ],
    [
      'overrides a client error_kind and http_error',
      { request_id: 1, error_kind: 'mine', http_error: 'mine' },
      'http_error',
      '{"a":1}',
      500,
      ['error', { request_id: 1, error_kind: 'http_error', http_error: 500 }, { a: 1 }],
    ],
    [
      'keeps a client http_error when the error has no http status',
      { request_id: 'r', http_error: 'mine' },
      'validation_error',
      '"invalid method"',
      undefined,
      ['error', { request_id: 'r', http_error: 'mine', error_kind: 'validation_error' }, 'invalid method'],
    ],
    [
      'sets error_kind on an empty meta',
      {},
      'internal_error',
      '"too_many_requests"',
      undefined,
      ['error', { error_kind: 'internal_error' }, 'too_many_requests'],
    ],
  ] as const)('%s', (_case, meta, kind, data, status, expected) => {
    expect(JSON.parse(encodeError({ ...meta }, kind, data, status))).toEqual(expected);
  });

  it('leaves the client meta unchanged', () => {
    const meta = { request_id: 1, error_kind: 'mine' };
    encodeError(meta, 'http_error', 'null', 500);
    expect(meta).toEqual({ request_id: 1, error_kind: 'mine' });
  });
});

describe(encodeCallFault.name, () => {
  it('echoes the whole meta with error_kind overriding a client value', () => {
    expect(JSON.parse(encodeCallFault({ request_id: 1, error_kind: 'x', a: [1] }, 'invalid method'))).toEqual([
      'error',
      { request_id: 1, error_kind: 'validation_error', a: [1] },
      'invalid method',
    ]);
  });

  it('echoes a meta nested 50,000 levels deep', () => {
    const deep = '['.repeat(50_000) + ']'.repeat(50_000);
    const frame = encodeCallFault(
      JSON.parse(`{"request_id":1,"d":${deep}}`) as Record<string, unknown>,
      'nested too deep',
    );
    expect(frame).toBe(`["error",{"request_id":1,"d":${deep},"error_kind":"validation_error"},"nested too deep"]`);
  });
});

describe(messageFrameHead.name, () => {
  it('is the frame up to the payload', () => {
    expect(messageFrameHead('chat.room')).toBe('["message",{"topic":"chat.room"},');
  });

  it('escapes the topic as a JSON string', () => {
    expect(JSON.parse(messageFrameHead('a"b') + '1]')).toEqual(['message', { topic: 'a"b' }, 1]);
  });
});

describe(encodeMessage.name, () => {
  it('splices the payload JSON after the topic', () => {
    expect(JSON.parse(encodeMessage('chat.room', '{"text":"hi"}'))).toEqual([
      'message',
      { topic: 'chat.room' },
      { text: 'hi' },
    ]);
  });
});

describe(encodeLattice.name, () => {
  it('encodes the namespace and the data', () => {
    const data = { room: { last_message_counter: 3 } };
    expect(JSON.parse(encodeLattice('chat.rooms', data))).toEqual(['lattice', { namespace: 'chat.rooms' }, data]);
  });
});
