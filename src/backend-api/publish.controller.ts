import { Controller, HttpCode, Param, Post } from '@nestjs/common';
import { PubSubService } from '../pubsub/pubsub.service';
import { ROUTES } from './api-routes';
import { JsonBody, JsonBodyPipe } from './body.pipes';
import { TopicPipe } from './path-params';
import { RequestBody } from './raw-body';

/** Endpoint 3: publish JSON to a topic. */
@Controller('v1')
export class PublishController {
  constructor(private readonly pubsub: PubSubService) {}

  @Post(ROUTES.publish)
  @HttpCode(204)
  publish(@Param('topic', TopicPipe) topic: string, @RequestBody(JsonBodyPipe) body: JsonBody): Promise<void> {
    return this.pubsub.publish(topic, body.bytes);
  }
}
