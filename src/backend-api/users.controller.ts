import { Controller, Delete, HttpCode, Param, Put } from '@nestjs/common';
import { PresenceService } from '../users-lattice/presence.service';
import { ROUTES } from './api-routes';
import { NoBodyPipe, UserListPipe } from './body.pipes';
import { ConnectionIdPipe, UserIdPipe } from './path-params';
import { RequestBody } from './raw-body';

/** Endpoints 7, 8 and 9: the users lattice `gateway.user`. */
@Controller('v1')
export class UsersController {
  constructor(private readonly presence: PresenceService) {}

  @Put(ROUTES.usersSubscription)
  @HttpCode(204)
  subscribe(@Param('cid', ConnectionIdPipe) cid: string, @RequestBody(UserListPipe) userIds: string[]): Promise<void> {
    return this.presence.subscribe(cid, userIds);
  }

  @Put(ROUTES.userUsers)
  @HttpCode(204)
  addForUser(@Param('uid', UserIdPipe) userId: string, @RequestBody(UserListPipe) userIds: string[]): Promise<void> {
    return this.presence.addForUser(userId, userIds);
  }

  @Delete(ROUTES.usersSubscription)
  @HttpCode(204)
  unsubscribe(@Param('cid', ConnectionIdPipe) cid: string, @RequestBody(NoBodyPipe) _: void): Promise<void> {
    return this.presence.unsubscribe(cid);
  }
}
