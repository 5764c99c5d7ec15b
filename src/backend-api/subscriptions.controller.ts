import { Controller, Delete, HttpCode, Param, Put } from '@nestjs/common';
import { PubSubService } from '../pubsub/pubsub.service';
import { ROUTES } from './api-routes';
import { NoBodyPipe } from './body.pipes';
import { ApiEndpoint, ApiV1 } from './openapi.decorators';
import { ConnectionIdPipe, TopicPipe } from './path-params';
import { RequestBody } from './raw-body';

/** Endpoints 1 and 2: topic subscriptions of a connection. */
@ApiV1('topics')
@Controller('v1')
export class SubscriptionsController {
  constructor(private readonly pubsub: PubSubService) {}

  @Put(ROUTES.topicSubscription)
  @ApiEndpoint(
    'Subscribe a connection to a topic (endpoint 1)',
    [
      ['cid', 'cid'],
      ['topic', 'topic'],
    ],
    'none',
    [400, 401, 404, 413, 503],
  )
  @HttpCode(204)
  subscribe(
    @Param('cid', ConnectionIdPipe) cid: string,
    @Param('topic', TopicPipe) topic: string,
    @RequestBody(NoBodyPipe) _: void,
  ): Promise<void> {
    return this.pubsub.subscribe(cid, topic);
  }

  @Delete(ROUTES.topicSubscription)
  @ApiEndpoint(
    'Unsubscribe a connection from a topic (endpoint 2)',
    [
      ['cid', 'cid'],
      ['topic', 'topic'],
    ],
    'none',
    [400, 401, 404, 413, 503],
  )
  @HttpCode(204)
  unsubscribe(
    @Param('cid', ConnectionIdPipe) cid: string,
    @Param('topic', TopicPipe) topic: string,
    @RequestBody(NoBodyPipe) _: void,
  ): Promise<void> {
    return this.pubsub.unsubscribe(cid, topic);
  }
}
