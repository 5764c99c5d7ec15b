import { applyDecorators } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiOperation, ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import { PARAM_PATTERNS, schemaRef } from './openapi.schemas';

/*
 * OpenAPI metadata of the /v1 routes (@nestjs/swagger). Decorators only record
 * metadata when the classes are defined: nothing here runs per request.
 */

type PathParam = keyof typeof PARAM_PATTERNS;
const PARAM_TEXT: Record<PathParam, string> = {
  cid: 'connection id, as sent in the authorization request; a well-formed unknown id is a no-op (204)',
  topic: 'topic; `/` separates parts (percent-encoded `%2F` works too); clients receive it with `/` as `.`',
  namespace: 'lattice namespace; `/` separates parts; `gateway/…` is reserved (403)',
  userId: 'user id',
};

const ERROR_TEXT: Record<number, string> = {
  400: 'bad body (see `error` and `message`)',
  401: 'BACKEND_API_TOKEN is set and the bearer token is missing or wrong (checked before anything else)',
  403: 'reserved namespace `gateway/…`',
  404: 'unknown path or method, or a path part outside its character set (empty body)',
  413: 'body over MAX_PAYLOAD_BYTES (`Connection: close`)',
  503: 'cluster mode only (SPEC §11): `owner_unreachable` (the node owning the connection did not acknowledge within 5 s) or `cluster_unavailable` (Redis not reachable from this node); retry',
};

/** Body schemas by kind: none, any JSON, or a named component. */
export type BodyKind = 'none' | 'json' | 'LatticeContent' | 'UserList' | 'BatchRequest';

/**
 * One /v1 route: its summary, path parameters (in path order, named as in the
 * route), body, and the statuses it can answer besides success (SPEC §5).
 */
export function ApiEndpoint(
  summary: string,
  params: ReadonlyArray<[string, PathParam]>,
  body: BodyKind,
  errors: readonly number[],
): MethodDecorator {
  const decorators = [
    ApiOperation({ summary }),
    body === 'BatchRequest'
      ? ApiResponse({
          status: 200,
          description: 'one result per command, in order',
          content: { 'application/json': { schema: schemaRef('BatchResponse') } },
        })
      : ApiResponse({ status: 204, description: 'done (also for a well-formed unknown connection or user id)' }),
    ...params.map(([name, kind]) =>
      ApiParam({ name, description: PARAM_TEXT[kind], schema: { type: 'string', pattern: PARAM_PATTERNS[kind] } }),
    ),
    ...errors.map((status) =>
      ApiResponse({
        status,
        description: ERROR_TEXT[status],
        ...(status === 400 || status === 503
          ? { content: { 'application/json': { schema: schemaRef('ApiError') } } }
          : {}),
      }),
    ),
  ];
  if (body === 'json')
    decorators.push(
      ApiBody({ required: true, description: 'any JSON value; Content-Type application/json (utf-8)', schema: {} }),
    );
  else if (body !== 'none') decorators.push(ApiBody({ required: true, schema: schemaRef(body) }));
  return applyDecorators(...decorators);
}

/** A /v1 controller: its tag and the optional bearer token (SPEC §1). */
export function ApiV1(tag: string): ClassDecorator {
  return applyDecorators(ApiTags(tag), ApiBearerAuth());
}
