import { Logger } from '@nestjs/common';
import { redisErrorCause } from '../config/redis-address';

/** ioredis' error for a round over the sentinels that gave no primary. */
const SENTINEL_ROUND_FAILED = 'All sentinels are unreachable';

/** What the bookkeeping reads of the link it speaks for. */
export interface CausedLink {
  /** Both connections ready. */
  readonly isUp: () => boolean;
  /** The link is being closed: its connections closing is no outage. */
  readonly isClosing: () => boolean;
}

/**
 * Why a link's connections are down, and what of it was said: the down
 * transition is logged with the last connection error's cause; while down,
 * each cause is said once per outage (and the rest is debug).
 */
export class OutageCauses {
  private readonly logger = new Logger('RedisLink');
  /** The last connection error's cause, and the one last logged (said once per outage and cause). */
  private lastCauseNow: string | null = null;
  private loggedCause: string | null = null;

  constructor(
    /** REDIS_URL as log lines show it: credentials redacted, host shown. */
    private readonly address: string,
    private readonly link: CausedLink,
  ) {}

  /** The last connection error's cause (null: none yet), e.g. for the start-up line. */
  get lastCause(): string | null {
    return this.lastCauseNow;
  }

  /** The link is up: the next outage says its causes again. */
  up(): void {
    this.loggedCause = null;
  }

  /** The link went down: `role`'s connection closed (not logged while the link closes). */
  down(role: string): void {
    if (!this.link.isClosing())
      this.logger.warn({
        msg: 'redis down',
        role,
        redis: this.address,
        cause: this.lastCauseNow ?? 'connection closed',
      });
  }

  /**
   * ioredis reports every failed attempt here. While the link is down, a
   * cause not yet logged in this outage is logged once (a wrong host or
   * password must not go unsaid); the rest is debug.
   */
  error(role: string, err: Error): void {
    const cause = redisErrorCause(err);
    this.lastCauseNow = cause;
    this.logger.debug({ msg: 'redis error', role, error: cause });
    // A failed round over the sentinels is said by PrimaryWatch, with the plain reason (SPEC §13.2).
    if (
      this.link.isUp() ||
      this.link.isClosing() ||
      cause === this.loggedCause ||
      cause.startsWith(SENTINEL_ROUND_FAILED)
    )
      return;
    this.loggedCause = cause;
    this.logger.warn({ msg: 'redis unreachable', role, redis: this.address, cause });
  }
}
