import { Controller, Delete, HttpCode, Param, Put } from '@nestjs/common';
import { PresenceService } from '../users-lattice/presence.service';
import { ROUTES } from './api-routes';
import { NoBodyPipe, UserListPipe } from './body.pipes';
import { ApiEndpoint, ApiV1 } from './openapi.decorators';
import { ConnectionIdPipe, UserIdPipe } from './path-params';
import { RequestBody } from './raw-body';

/** Endpoints 7, 8 and 9: the users lattice `gateway.user`. */
@ApiV1('users')
@Controller('v1')
export class UsersController {
  constructor(private readonly presence: PresenceService) {}

  @Put(ROUTES.usersSubscription)
  @ApiEndpoint(
    "Subscribe a connection to gateway.user with these users' status (endpoint 7)",
    [['cid', 'cid']],
    'UserList',
    [400, 401, 404, 413, 503],
  )
  @HttpCode(204)
  subscribe(@Param('cid', ConnectionIdPipe) cid: string, @RequestBody(UserListPipe) userIds: string[]): Promise<void> {
    return this.presence.subscribe(cid, userIds);
  }

  @Put(ROUTES.userUsers)
  @ApiEndpoint(
    "Add users to every gateway.user subscription of a user's connections (endpoint 8)",
    [['uid', 'userId']],
    'UserList',
    [400, 401, 404, 413, 503],
  )
  @HttpCode(204)
  addForUser(@Param('uid', UserIdPipe) userId: string, @RequestBody(UserListPipe) userIds: string[]): Promise<void> {
    return this.presence.addForUser(userId, userIds);
  }

  @Delete(ROUTES.usersSubscription)
  @ApiEndpoint(
    'Unsubscribe a connection from gateway.user (endpoint 9)',
    [['cid', 'cid']],
    'none',
    [400, 401, 404, 413, 503],
  )
  @HttpCode(204)
  unsubscribe(@Param('cid', ConnectionIdPipe) cid: string, @RequestBody(NoBodyPipe) _: void): Promise<void> {
    return this.presence.unsubscribe(cid);
  }
}
