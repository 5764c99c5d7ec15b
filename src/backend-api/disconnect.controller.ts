import { Controller, Delete, HttpCode, Param } from '@nestjs/common';
import { ROUTES } from './api-routes';
import { NoBodyPipe } from './body.pipes';
import { DisconnectService } from './disconnect.service';
import { ApiEndpoint, ApiV1 } from './openapi.decorators';
import { ConnectionIdPipe, UserIdPipe } from './path-params';
import { RequestBody } from './raw-body';

/** SPEC §12.6: the backend ends a connection, or every connection of a user (close 4403 `disconnected`). */
@ApiV1('connections')
@Controller('v1')
export class DisconnectController {
  constructor(private readonly disconnects: DisconnectService) {}

  @Delete(ROUTES.connection)
  @ApiEndpoint(
    'Close a connection with 4403 `disconnected`; its session ends and cannot be resumed (SPEC §12.6)',
    [['cid', 'cid']],
    'none',
    [400, 401, 404, 413, 503],
  )
  @HttpCode(204)
  disconnect(@Param('cid', ConnectionIdPipe) cid: string, @RequestBody(NoBodyPipe) _: void): Promise<void> {
    return this.disconnects.disconnect(cid);
  }

  @Delete(ROUTES.userConnections)
  @ApiEndpoint(
    'Close every connection of a user, on every node, with 4403 `disconnected` (SPEC §12.6)',
    [['uid', 'userId']],
    'none',
    [400, 401, 404, 413, 503],
  )
  @HttpCode(204)
  disconnectUser(@Param('uid', UserIdPipe) userId: string, @RequestBody(NoBodyPipe) _: void): Promise<void> {
    return this.disconnects.disconnectUser(userId);
  }
}
