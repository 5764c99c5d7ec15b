import { Controller, Delete, HttpCode, Param, Put } from '@nestjs/common';
import { PubSubService } from '../pubsub/pubsub.service';
import { ROUTES } from './api-routes';
import { NoBodyPipe } from './body.pipes';
import { ConnectionIdPipe, TopicPipe } from './path-params';
import { RequestBody } from './raw-body';

/** Endpoints 1 and 2: topic subscriptions of a connection. */
@Controller('v1')
export class SubscriptionsController {
  constructor(private readonly pubsub: PubSubService) {}

  @Put(ROUTES.topicSubscription)
  @HttpCode(204)
  subscribe(@Param('cid', ConnectionIdPipe) cid: string, @Param('topic', TopicPipe) topic: string, @RequestBody(NoBodyPipe) _: void): Promise<void> {
    return this.pubsub.subscribe(cid, topic);
  }

  @Delete(ROUTES.topicSubscription)
  @HttpCode(204)
  unsubscribe(@Param('cid', ConnectionIdPipe) cid: string, @Param('topic', TopicPipe) topic: string, @RequestBody(NoBodyPipe) _: void): Promise<void> {
    return this.pubsub.unsubscribe(cid, topic);
  }
}
