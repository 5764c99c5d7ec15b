import { Connection } from '../connections/connection';
import { ConnectionRegistry } from '../connections/connection-registry';
import { Identity } from '../protocol/identity';
import { DeadlineQueue } from '../scheduling/deadline-queue';
import { extendDeadline } from './activity';
import { ActivityEvents, UserActivity } from './user-activity';

interface UserDeadline {
  readonly userId: string;
  status: 'active' | 'inactive';
  deadlineAt: number;
  /** Identity header and handler of the latest authorization: who the inactivity notice speaks for. */
  authorization: string;
  handlerName: string;
}

/** One node: every user's deadline in one queue, one timer for the earliest (no Timeout per user). */
export class MemoryActivity extends UserActivity {
  private readonly users = new Map<string, UserDeadline>();
  private readonly deadlines = new DeadlineQueue<UserDeadline>();
  private timer: NodeJS.Timeout | null = null;
  private timerAt: number | null = null;

  constructor(
    private readonly events: ActivityEvents,
    private readonly registry: ConnectionRegistry,
  ) {
    super();
  }

  authorized(identity: Identity, handlerName: string, windowMs: number): void {
    const userId = identity.userId;
    const user = this.users.get(userId);
    if (user === undefined) {
      const created: UserDeadline = {
        userId,
        status: 'active',
        deadlineAt: Date.now() + windowMs,
        authorization: identity.authorization,
        handlerName,
      };
      this.users.set(userId, created);
      this.schedule(created);
      this.events.announce(userId, 'active', Date.now());
      return;
    }
    user.authorization = identity.authorization;
    user.handlerName = handlerName;
    this.extend(user, windowMs);
  }

  statusOf(userId: string): 'active' | 'inactive' | null {
    return this.users.get(userId)?.status ?? null;
  }

  touch(userId: string, windowMs: number): void {
    const user = this.users.get(userId);
    if (user !== undefined) this.extend(user, windowMs);
  }

  refreshed(identity: Identity): void {
    const user = this.users.get(identity.userId);
    if (user !== undefined) user.authorization = identity.authorization;
  }

  /** One node has no other node to take a session over from. */
  adopted(): void {}

  connectionGone(connection: Connection): void {
    const userId = connection.userId;
    if (userId === null || this.registry.hasUser(userId)) return;
    if (this.users.get(userId)?.status === 'inactive') this.end(userId);
  }

  stop(): Promise<void> {
    if (this.timer !== null) clearTimeout(this.timer);
    return Promise.resolve();
  }

  private extend(user: UserDeadline, windowMs: number): void {
    user.deadlineAt = extendDeadline(user.deadlineAt, Date.now(), windowMs);
    if (user.status === 'inactive') {
      // [fix] an inactive user becomes active again.
      user.status = 'active';
      this.schedule(user);
      this.events.announce(user.userId, 'active', Date.now());
    }
  }

  /** Queue the user's deadline; extensions are picked up lazily when the entry comes due. */
  private schedule(user: UserDeadline): void {
    this.deadlines.push(user.deadlineAt, user);
    if (this.timerAt === null || user.deadlineAt < this.timerAt) this.arm();
  }

  private arm(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    const at = this.deadlines.peekAt();
    this.timerAt = at;
    this.timer = at === null ? null : setTimeout(() => this.onTimer(), Math.max(0, at - Date.now()));
    this.timer?.unref();
  }

  private onTimer(): void {
    this.timer = null;
    this.timerAt = null;
    for (const entry of this.deadlines.popDue(Date.now())) this.onDeadline(entry.key);
    if (this.timerAt === null) this.arm();
  }

  private onDeadline(user: UserDeadline): void {
    const userId = user.userId;
    // Stale entry: the user left, came back as another entry, or went inactive meanwhile.
    if (this.users.get(userId) !== user || user.status !== 'active') return;
    if (user.deadlineAt > Date.now()) return this.schedule(user);
    this.events.inactive(userId, user.authorization, user.handlerName);
    if (this.registry.hasUser(userId)) {
      user.status = 'inactive';
      this.events.announce(userId, 'inactive', Date.now());
    } else {
      this.end(userId);
    }
  }

  private end(userId: string): void {
    this.users.delete(userId);
    this.events.announce(userId, 'offline', Date.now());
  }
}
