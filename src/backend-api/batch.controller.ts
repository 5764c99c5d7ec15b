import { Controller, HttpCode, Post } from '@nestjs/common';
import { ROUTES } from './api-routes';
import { BatchCommand, BatchResult } from './batch-envelope';
import { BatchService } from './batch.service';
import { BatchBodyPipe } from './body.pipes';
import { ApiEndpoint, ApiV1 } from './openapi.decorators';
import { RequestBody } from './raw-body';

/** `POST /v1/batch` [ext]: several endpoint calls in one request, one result each, in order (SPEC §5). */
@ApiV1('batch')
@Controller('v1')
export class BatchController {
  constructor(private readonly batch: BatchService) {}

  @Post(ROUTES.batch)
  @ApiEndpoint(
    'Run several endpoint calls in order, one result each (SPEC §5 [ext])',
    [],
    'BatchRequest',
    [400, 401, 413],
  )
  @HttpCode(200)
  run(@RequestBody(BatchBodyPipe) commands: BatchCommand[]): Promise<{ results: BatchResult[] }> {
    return this.batch.run(commands);
  }
}
