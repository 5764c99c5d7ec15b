import { Controller, Delete, HttpCode, Param, Put } from '@nestjs/common';
import { PresenceService } from '../users-lattice/presence.service';
import { NoBodyPipe, UserListPipe } from './body.pipes';
import { ConnectionIdPipe, UserIdPipe } from './path-params';
import { RequestBody } from './raw-body';

/** Endpoints 7, 8 and 9: the users lattice `gateway.user`. */
@Controller('v1')
export class UsersController {
  constructor(private readonly presence: PresenceService) {}

  @Put('connection/:cid/users')
  @HttpCode(204)
  subscribe(@Param('cid', ConnectionIdPipe) cid: string, @RequestBody(UserListPipe) userIds: string[]): Promise<void> {
    return this.presence.subscribe(cid, userIds);
  }

  @Put('user/*uid/users')
  @HttpCode(204)
  addForUser(@Param('uid', UserIdPipe) userId: string, @RequestBody(UserListPipe) userIds: string[]): Promise<void> {
    return this.presence.addForUser(userId, userIds);
  }

  @Delete('connection/:cid/users')
  @HttpCode(204)
  unsubscribe(@Param('cid', ConnectionIdPipe) cid: string, @RequestBody(NoBodyPipe) _: void): Promise<void> {
    return this.presence.unsubscribe(cid);
  }
}
