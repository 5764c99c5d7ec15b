/** What the client's upgrade request carried (SPEC §3 kwargs). */
export interface AuthRequest {
  readonly cookie: string | null;
  readonly authorization: string | null;
  readonly queryString: string;
}

/**
 * SPEC §3: `[{"connection_id": …}, [], {"http_cookie": …, "http_authorization": …, "url_querystring": …}]`,
 * written as text: the same bytes JSON.stringify gives for those objects, without building them per connect.
 */
export function authorizationBody(connectionId: string, request: AuthRequest): string {
  return (
    '[{"connection_id":' +
    JSON.stringify(connectionId) +
    '},[],{"http_cookie":' +
    JSON.stringify(request.cookie) +
    ',"http_authorization":' +
    JSON.stringify(request.authorization) +
    ',"url_querystring":' +
    JSON.stringify(request.queryString) +
    '}]'
  );
}
