import { callErrorInfoOf, encodeCall, parseServerFrame } from './frames';

describe(parseServerFrame.name, () => {
  it.each([
    [
      'hello',
      '["hello",{},{"user_id":"alice","name":"A"}]',
      {
        type: 'hello',
        hello: { user_id: 'alice', name: 'A' },
        meta: { resume: null, resumed: false, lost: [], replayed: null },
      },
    ],
    [
      'a resumable hello',
      '["hello",{"resume":{"token":"T1","window":30}},{"user_id":"a"}]',
      {
        type: 'hello',
        hello: { user_id: 'a' },
        meta: { resume: { token: 'T1', windowSeconds: 30 }, resumed: false, lost: [], replayed: null },
      },
    ],
    [
      'a resumed hello',
      '["hello",{"resume":{"token":"T2","window":30},"resumed":true,"lost":["a.b",7]},{"user_id":"a"}]',
      {
        type: 'hello',
        hello: { user_id: 'a' },
        meta: { resume: { token: 'T2', windowSeconds: 30 }, resumed: true, lost: ['a.b'], replayed: null },
      },
    ],
    [
      'a resumed hello that says how many messages follow',
      '["hello",{"resume":{"token":"T2","window":30},"resumed":true,"lost":[],"replayed":3},{"user_id":"a"}]',
      {
        type: 'hello',
        hello: { user_id: 'a' },
        meta: { resume: { token: 'T2', windowSeconds: 30 }, resumed: true, lost: [], replayed: 3 },
      },
    ],
    [
      'a resumed hello with a malformed count (not said)',
      '["hello",{"resume":{"token":"T2","window":30},"resumed":true,"lost":[],"replayed":-1},{"user_id":"a"}]',
      {
        type: 'hello',
        hello: { user_id: 'a' },
        meta: { resume: { token: 'T2', windowSeconds: 30 }, resumed: true, lost: [], replayed: null },
      },
    ],
    [
      'a failed resume',
      '["hello",{"resume":{"token":"T3","window":5},"resumed":false},{"user_id":"a"}]',
      {
        type: 'hello',
        hello: { user_id: 'a' },
        meta: { resume: { token: 'T3', windowSeconds: 5 }, resumed: false, lost: [], replayed: null },
      },
    ],
    [
      'a hello whose resume object is malformed (no session)',
      '["hello",{"resume":{"token":42},"resumed":true},{"user_id":"a"}]',
      { type: 'hello', hello: { user_id: 'a' }, meta: { resume: null, resumed: false, lost: [], replayed: null } },
    ],
    ['result', '["result",{"request_id":7},{"ok":true}]', { type: 'result', requestId: 7, data: { ok: true } }],
    [
      'result with a string id',
      '["result",{"request_id":"probe-1"},null]',
      { type: 'result', requestId: 'probe-1', data: null },
    ],
    [
      'http_error',
      '["error",{"request_id":2,"error_kind":"http_error","http_error":404},{"error":"no"}]',
      { type: 'error', requestId: 2, error: { kind: 'http_error', status: 404, body: { error: 'no' } } },
    ],
    [
      'validation_error',
      '["error",{"request_id":3,"error_kind":"validation_error"},"invalid method"]',
      { type: 'error', requestId: 3, error: { kind: 'validation_error', text: 'invalid method' } },
    ],
    [
      'error without id',
      '["error",{"error_kind":"internal_error"},null]',
      { type: 'error', requestId: null, error: { kind: 'internal_error', text: null } },
    ],
    [
      'message',
      '["message",{"topic":"rooms.lobby"},{"text":"hi"}]',
      { type: 'message', topic: 'rooms.lobby', data: { text: 'hi' }, position: null },
    ],
    [
      'a positioned message',
      '["message",{"topic":"a","offset":3,"epoch":"E"},1]',
      { type: 'message', topic: 'a', data: 1, position: { offset: 3, epoch: 'E' } },
    ],
    [
      'a message with a malformed position (delivered, not tracked)',
      '["message",{"topic":"a","offset":"3","epoch":"E"},1]',
      { type: 'message', topic: 'a', data: 1, position: null },
    ],
    [
      'lattice',
      '["lattice",{"namespace":"rooms"},{"lobby":{"last_message_counter":3},"x":{}}]',
      { type: 'lattice', namespace: 'rooms', data: { lobby: { last_message_counter: 3 }, x: {} } },
    ],
    [
      'fatal_error',
      '["fatal_error",{"error_kind":"http_error","http_error":401},{"error":"who?"}]',
      { type: 'fatal_error', errorKind: 'http_error', status: 401, data: { error: 'who?' } },
    ],
    [
      'validation fatal_error',
      '["fatal_error",{"error_kind":"validation_error"},"bad frame"]',
      { type: 'fatal_error', errorKind: 'validation_error', status: null, data: 'bad frame' },
    ],
  ])('parses %s', (_name, text, frame) => {
    expect(parseServerFrame(text)).toEqual(frame);
  });

  it.each([
    ['not JSON', '["hello"'],
    ['not an array', '{"hello":1}'],
    ['two elements', '["result",{}]'],
    ['meta not an object', '["result",[],1]'],
    ['an unknown type', '["surprise",{},1]'],
    ['hello without user_id', '["hello",{},{}]'],
    ['result without request_id', '["result",{},1]'],
    ['message without topic', '["message",{},1]'],
    ['lattice whose key is not an object', '["lattice",{"namespace":"n"},{"k":1}]'],
    ['lattice data an array', '["lattice",{"namespace":"n"},[]]'],
  ])('reads %s as unknown', (_name, text) => {
    expect(parseServerFrame(text)).toEqual({ type: 'unknown' });
  });
});

describe(callErrorInfoOf.name, () => {
  it.each([
    [{ error_kind: 'data_error' }, 'Unexpected token', { kind: 'data_error', text: 'Unexpected token' }],
    [{ error_kind: 'internal_error' }, 'too_many_requests', { kind: 'internal_error', text: 'too_many_requests' }],
    [{ error_kind: 'http_error', http_error: 503 }, null, { kind: 'http_error', status: 503, body: null }],
    [{ error_kind: 'http_error' }, null, { kind: 'http_error', status: 500, body: null }],
    [{ error_kind: 'from_the_future' }, { a: 1 }, { kind: 'internal_error', text: '{"a":1}' }],
  ])('maps meta %j', (meta, data, info) => {
    expect(callErrorInfoOf(meta, data)).toEqual(info);
  });
});

describe(encodeCall.name, () => {
  it('encodes [method, meta, args, kwargs] with active only when given', () => {
    expect(encodeCall('chat.send', 4, ['lobby', 'hi'], { x: 1 })).toBe(
      '["chat.send",{"request_id":4},["lobby","hi"],{"x":1}]',
    );
    expect(encodeCall('chat.send', 5, [], {}, 30)).toBe('["chat.send",{"request_id":5,"active":30},[],{}]');
  });
});
