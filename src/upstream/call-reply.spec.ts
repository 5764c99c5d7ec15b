import type { JsonObject } from '../protocol/frames';
import { callReply } from './call-reply';
import type { UpstreamResponse } from './upstream-response';

const META: JsonObject = { request_id: 7, trace: 'abc', nested: { a: [1] } };

function response(status: number, contentType: string | undefined, body: string): UpstreamResponse {
  return { kind: 'response', status, contentType, body: Buffer.from(body, 'utf8') };
}

function parserMessage(text: string): string {
  try {
    JSON.parse(text);
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('parses');
}

describe(callReply.name, () => {
  describe('status 200 with a JSON Content-Type and valid JSON', () => {
    it.each([
      ['application/json', '{"messages":[1,2]}', { messages: [1, 2] }],
      ['application/json; charset=utf-8', '[1,"a",null]', [1, 'a', null]],
      ['Application/JSON;charset=UTF-8', '"text"', 'text'],
      ['application/json; charset="utf-8"', 'null', null],
      ['application/json', ' \n{"a" : 1}\n', { a: 1 }],
      ['application/json', '42', 42],
    ])('answers %p with body %p as a result echoing the meta', (contentType, body, data) => {
      const reply = callReply(META, response(200, contentType, body));
      expect(JSON.parse(reply.frame)).toEqual(['result', META, data]);
      expect(reply.outcome).toBe('ok');
    });

    it('splices the body text into the frame as it came', () => {
      expect(callReply({ request_id: 1 }, response(200, 'application/json', '{ "b": 1,  "a": 2 }')).frame).toBe(
        '["result",{"request_id":1},{ "b": 1,  "a": 2 }]',
      );
    });
  });

  describe('status 200 with a JSON Content-Type and invalid JSON', () => {
    it.each(['', 'not json', '{"a":1,}', '[1,2', '{"a":1} x'])(
      'answers body %p with data_error and the parser message',
      (body) => {
        const reply = callReply(META, response(200, 'application/json', body));
        expect(JSON.parse(reply.frame)).toEqual(['error', { ...META, error_kind: 'data_error' }, parserMessage(body)]);
        expect(reply.outcome).toBe('data_error');
      },
    );
  });

  describe('status 200 without a JSON Content-Type', () => {
    it.each([
      undefined,
      '',
      'text/plain',
      'text/json',
      'application/json; charset=iso-8859-1',
      'application/jsonx',
      'application/json-patch+json',
    ])('answers Content-Type %p with http_error 500 and null', (contentType) => {
      const reply = callReply(META, response(200, contentType, '{"a":1}'));
      expect(JSON.parse(reply.frame)).toEqual(['error', { ...META, error_kind: 'http_error', http_error: 500 }, null]);
      expect(reply.outcome).toBe('http_error');
    });
  });

  describe('any other status', () => {
    it.each([201, 204, 301, 400, 401, 403, 404, 410, 418, 500, 502, 503])(
      'answers %i with a JSON body with that status and the body',
      (status) => {
        const reply = callReply(META, response(status, 'application/json', '{"missing":true}'));
        expect(JSON.parse(reply.frame)).toEqual([
          'error',
          { ...META, error_kind: 'http_error', http_error: status },
          { missing: true },
        ]);
        expect(reply.outcome).toBe('http_error');
      },
    );

    it.each([
      ['a non-JSON Content-Type', 'text/html', '{"a":1}'],
      ['no Content-Type', undefined, '{"a":1}'],
      ['invalid JSON', 'application/json', '<html>'],
      ['an empty body', 'application/json', ''],
    ])('answers a 404 with %s with that status and null', (_case, contentType, body) => {
      const reply = callReply(META, response(404, contentType, body));
      expect(JSON.parse(reply.frame)).toEqual(['error', { ...META, error_kind: 'http_error', http_error: 404 }, null]);
    });
  });

  describe('transport failures', () => {
    it.each<UpstreamResponse>([
      { kind: 'timeout' },
      { kind: 'connection_error', reason: 'ECONNRESET' },
      { kind: 'too_large' },
    ])('answers $kind with http_error 500 and null', (failure) => {
      const reply = callReply(META, failure);
      expect(JSON.parse(reply.frame)).toEqual(['error', { ...META, error_kind: 'http_error', http_error: 500 }, null]);
      expect(reply.outcome).toBe('transport_error');
    });

    it('answers a full destination queue with internal_error "too_many_requests"', () => {
      const reply = callReply(META, { kind: 'queue_full' });
      expect(JSON.parse(reply.frame)).toEqual([
        'error',
        { ...META, error_kind: 'internal_error' },
        'too_many_requests',
      ]);
      expect(reply.outcome).toBe('queue_full');
    });
  });

  describe('the echoed meta', () => {
    const clientMeta = { request_id: 'r-1', error_kind: 'mine', http_error: 'mine', keep: 'me' };

    it.each<[string, UpstreamResponse, JsonObject]>([
      ['an http error', response(404, undefined, ''), { error_kind: 'http_error', http_error: 404 }],
      ['a data error', response(200, 'application/json', 'x'), { error_kind: 'data_error', http_error: 'mine' }],
      ['a transport error', { kind: 'timeout' }, { error_kind: 'http_error', http_error: 500 }],
      ['a full queue', { kind: 'queue_full' }, { error_kind: 'internal_error', http_error: 'mine' }],
    ])('on %s keeps every client key and lets the error fields override theirs', (_case, upstream, errorFields) => {
      const [, meta] = JSON.parse(callReply(clientMeta, upstream).frame) as [string, JsonObject];
      expect(meta).toEqual({ ...clientMeta, ...errorFields });
    });

    it('is the client meta unchanged in a result', () => {
      const [, meta] = JSON.parse(callReply(clientMeta, response(200, 'application/json', '1')).frame) as [
        string,
        JsonObject,
      ];
      expect(meta).toEqual(clientMeta);
    });
  });
});
