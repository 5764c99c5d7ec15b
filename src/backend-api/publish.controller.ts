import { Controller, HttpCode, Param, Post } from '@nestjs/common';
import { PubSubService } from '../pubsub/pubsub.service';
import { ROUTES } from './api-routes';
import { JsonBody, JsonBodyPipe } from './body.pipes';
import { ApiEndpoint, ApiV1 } from './openapi.decorators';
import { TopicPipe } from './path-params';
import { RequestBody } from './raw-body';

/** Endpoint 3: publish JSON to a topic. */
@ApiV1('topics')
@Controller('v1')
export class PublishController {
  constructor(private readonly pubsub: PubSubService) {}

  @Post(ROUTES.publish)
  @ApiEndpoint(
    'Publish a JSON message to every subscriber of a topic (endpoint 3)',
    [['topic', 'topic']],
    'json',
    [400, 401, 404, 413, 503],
  )
  @HttpCode(204)
  publish(@Param('topic', TopicPipe) topic: string, @RequestBody(JsonBodyPipe) body: JsonBody): Promise<void> {
    return this.pubsub.publish(topic, body.bytes);
  }
}
