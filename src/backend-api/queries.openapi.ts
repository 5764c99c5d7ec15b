import { applyDecorators } from '@nestjs/common';
import { ApiOperation, ApiParam, ApiQuery, ApiResponse } from '@nestjs/swagger';
import type { SchemaObject } from '@nestjs/swagger/dist/interfaces/open-api-spec.interface';
import { PARAM_PATTERNS } from './openapi.schemas';

/*
 * OpenAPI metadata of the SPEC §15.2 GET queries: answers with their schema
 * and an example, `limit`/`cursor` where a list pages.
 */

const UNREACHABLE = {
  type: 'array',
  items: { type: 'string' },
  description: 'cluster mode: live nodes that did not answer within 2 s (present only when some did not)',
};
const CURSOR = { type: ['string', 'null'], description: 'pass as `cursor` for the next page; null on the last page' };
const STATE = { enum: ['attached', 'detached', 'connecting'] };
const NODE_ENTRY = {
  type: 'object',
  properties: {
    connection_id: { type: 'string' },
    node: {
      type: ['string', 'null'],
      description: 'null: held by no node (its node drained or died), until resumed',
    },
    state: STATE,
  },
  required: ['connection_id', 'node', 'state'],
};

export const QUERY_ANSWERS: Record<'connection' | 'user' | 'topic' | 'info', { schema: object; example: object }> = {
  connection: {
    schema: {
      type: 'object',
      properties: {
        connection_id: { type: 'string' },
        user_id: { type: ['string', 'null'], description: 'null while connecting' },
        node: {
          type: ['string', 'null'],
          description: 'null: held by no node (its node drained or died), until resumed',
        },
        state: STATE,
        topics: { type: 'array', items: { type: 'string' }, description: 'path form (`a/b`)' },
        lattices: { type: 'array', items: { type: 'string' }, description: 'namespaces, path form' },
        watches_users: { type: 'boolean', description: 'subscribed to gateway.user (endpoint 7)' },
        unreachable: UNREACHABLE,
      },
      required: ['connection_id', 'user_id', 'node', 'state', 'topics', 'lattices', 'watches_users'],
    },
    example: {
      connection_id: 'nodeA-Xq3v9cM0b1TQy2Hn7wKpLg',
      user_id: 'alice',
      node: 'nodeA',
      state: 'attached',
      topics: ['rooms/lobby'],
      lattices: ['rooms'],
      watches_users: true,
    },
  },
  user: {
    schema: {
      type: 'object',
      properties: {
        user_id: { type: 'string' },
        status: { enum: ['active', 'inactive', 'offline'] },
        connections: { type: 'array', items: NODE_ENTRY },
        cursor: CURSOR,
        unreachable: UNREACHABLE,
      },
      required: ['user_id', 'status', 'connections', 'cursor'],
    },
    example: {
      user_id: 'alice',
      status: 'active',
      connections: [{ connection_id: 'nodeA-Xq3v9cM0b1TQy2Hn7wKpLg', node: 'nodeA', state: 'attached' }],
      cursor: null,
    },
  },
  topic: {
    schema: {
      type: 'object',
      properties: {
        topic: { type: 'string' },
        subscribers: { type: 'integer', description: 'connections, detached sessions included' },
        users: { type: 'integer', description: 'distinct users per node, summed over the nodes' },
        history: {
          type: ['object', 'null'],
          description: 'null when resumable sessions are off (RESUME_WINDOW=0)',
          properties: { epoch: { type: ['string', 'null'] }, offset: { type: 'integer' }, kept: { type: 'integer' } },
        },
        connection_ids: { type: 'array', items: { type: 'string' }, description: 'with `?connections=1` only' },
        cursor: { ...CURSOR, description: 'with `?connections=1` only: ' + CURSOR.description },
        unreachable: UNREACHABLE,
      },
      required: ['topic', 'subscribers', 'users', 'history'],
    },
    example: { topic: 'rooms/lobby', subscribers: 3, users: 2, history: null },
  },
  info: {
    schema: {
      type: 'object',
      properties: {
        nodes: {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              node_id: { type: 'string' },
              connections: { type: 'integer', description: 'with a socket (connecting ones included)' },
              detached: { type: 'integer' },
              topics: { type: 'integer' },
              namespaces: { type: 'integer' },
              version: { type: 'string' },
              uptime_s: { type: 'integer' },
            },
          },
        },
        unreachable: UNREACHABLE,
      },
      required: ['nodes'],
    },
    example: {
      nodes: [
        { node_id: 'nodeA', connections: 2, detached: 0, topics: 1, namespaces: 1, version: '1.0.0', uptime_s: 42 },
      ],
    },
  },
};

const PAGE_PARAMS = [
  ApiQuery({
    name: 'limit',
    required: false,
    schema: { type: 'integer', minimum: 1, maximum: 1000, default: 100 },
    description: 'page size; outside 1–1000 → 400 `invalid_limit`',
  }),
  ApiQuery({
    name: 'cursor',
    required: false,
    schema: { type: 'string' },
    description: 'the `cursor` of the previous page, unchanged; anything else → 400 `invalid_cursor`',
  }),
];

/** One GET query: summary, path parameter, answer, whether it pages, and its 404. */
export function ApiQueryEndpoint(
  summary: string,
  param: [string, keyof typeof PARAM_PATTERNS] | null,
  answer: keyof typeof QUERY_ANSWERS,
  pages: boolean,
  notFound = 'malformed path part (empty body)',
): MethodDecorator {
  const { schema, example } = QUERY_ANSWERS[answer];
  return applyDecorators(
    ApiOperation({ summary }),
    ApiResponse({
      status: 200,
      description: 'the answer',
      content: { 'application/json': { schema: schema as SchemaObject, example } },
    }),
    ...(param === null
      ? []
      : [ApiParam({ name: param[0], schema: { type: 'string', pattern: PARAM_PATTERNS[param[1]] } })]),
    ...(pages ? PAGE_PARAMS : []),
    ...(pages ? [ApiResponse({ status: 400, description: '`invalid_limit` or `invalid_cursor`' })] : []),
    ApiResponse({ status: 401, description: 'BACKEND_API_TOKEN is set and the bearer token is missing or wrong' }),
    ApiResponse({ status: 404, description: notFound }),
  );
}
