import { Controller, Get, Param, Query, Res } from '@nestjs/common';
import type { Response } from 'express';
import { parsePageParams } from '../queries/query-page';
import { PageRequest, QueriesService } from '../queries/queries.service';
import { ROUTES } from './api-routes';
import { badRequest } from './backend-api.error';
import { ApiV1 } from './openapi.decorators';
import { ConnectionIdPipe, TopicPipe, UserIdPipe } from './path-params';
import { ApiQueryEndpoint } from './queries.openapi';

/** SPEC §15.2: what the gateway holds, asked by the backend; cluster-wide, paged. */
@ApiV1('queries')
@Controller('v1')
export class QueriesController {
  constructor(private readonly queries: QueriesService) {}

  @Get(ROUTES.connection)
  @ApiQueryEndpoint(
    'A connection: user, node, state, subscriptions',
    ['cid', 'cid'],
    'connection',
    false,
    'unknown connection: `{"error": "unknown_connection"}` (plus `unreachable` when a silent node may hold it); malformed id: empty body',
  )
  async connection(@Param('cid', ConnectionIdPipe) cid: string, @Res({ passthrough: true }) res: Response) {
    const { found, unreachable } = await this.queries.connection(cid);
    return found ?? void res.status(404).json(unknownConnection(unreachable));
  }

  @Get(ROUTES.userConnections)
  @ApiQueryEndpoint("A user's status and connections on every node", ['uid', 'userId'], 'user', true)
  userConnections(@Param('uid', UserIdPipe) userId: string, @Query() query: Record<string, unknown>) {
    return this.queries.userConnections(userId, pageOf(query));
  }

  @Get(ROUTES.topic)
  @ApiQueryEndpoint(
    'A topic: subscribers, users, history; `?connections=1` adds a page of ids',
    ['topic', 'topic'],
    'topic',
    true,
  )
  topic(@Param('topic', TopicPipe) topic: string, @Query() query: Record<string, unknown>) {
    const page = pageOf(query); // checked also without ?connections=1: a bad limit is a caller's bug either way
    return this.queries.topic(topic, query.connections === '1' ? page : null);
  }

  @Get(ROUTES.info)
  @ApiQueryEndpoint('Every node with its kept counters', null, 'info', false, 'never')
  info() {
    return this.queries.info();
  }
}

/** SPEC §15.2's 404 body; with the nodes that did not answer, when one of them may hold it. */
function unknownConnection(unreachable: string[]): object {
  return unreachable.length === 0 ? { error: 'unknown_connection' } : { error: 'unknown_connection', unreachable };
}

/** `limit` and `cursor`, or the 400 they deserve. */
function pageOf(query: Record<string, unknown>): PageRequest {
  const page = parsePageParams(query.limit, query.cursor);
  if (!page.ok) throw badRequest(page.error, page.message);
  return page;
}
