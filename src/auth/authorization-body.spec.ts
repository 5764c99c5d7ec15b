import { AuthRequest, authorizationBody } from './authorization-body';

describe(authorizationBody.name, () => {
  it.each<[string, AuthRequest]>([
    ['no credentials', { cookie: null, authorization: null, queryString: '' }],
    ['a cookie and a query', { cookie: 'sid=abc; theme=dark', authorization: null, queryString: 'user=u1&x=%20' }],
    ['an authorization header', { cookie: null, authorization: 'Bearer a.b.c', queryString: 'a=1' }],
    ['quotes, backslashes and controls', { cookie: 'a="b"\\c', authorization: 'x\ty\n', queryString: '"\u0001' }],
    ['non-ASCII and lone surrogates', { cookie: 'é€😀', authorization: '\ud800', queryString: '\u2028' }],
  ])('writes the same bytes as JSON.stringify of SPEC §3 kwargs: %s', (_, request) => {
    const id = 'node-1.Abc_123';
    expect(authorizationBody(id, request)).toBe(
      JSON.stringify([
        { connection_id: id },
        [],
        {
          http_cookie: request.cookie,
          http_authorization: request.authorization,
          url_querystring: request.queryString,
        },
      ]),
    );
  });
});
