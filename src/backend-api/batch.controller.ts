import { Controller, HttpCode, Post } from '@nestjs/common';
import { ROUTES } from './api-routes';
import { BatchCommand, BatchResult } from './batch-envelope';
import { BatchService } from './batch.service';
import { BatchBodyPipe } from './body.pipes';
import { RequestBody } from './raw-body';

/** `POST /v1/batch` [ext]: several endpoint calls in one request, one result each, in order (SPEC §5). */
@Controller('v1')
export class BatchController {
  constructor(private readonly batch: BatchService) {}

  @Post(ROUTES.batch)
  @HttpCode(200)
  run(@RequestBody(BatchBodyPipe) commands: BatchCommand[]): Promise<{ results: BatchResult[] }> {
    return this.batch.run(commands);
  }
}
