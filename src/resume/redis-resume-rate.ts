import { Logger } from '@nestjs/common';
import { ClusterNames } from '../cluster/channels';
import { RedisLink } from '../cluster/redis-link';
import { RESUMES_PER_WINDOW, RESUME_RATE_WINDOW_MS, ResumeRate } from './resume-rate';

// The session's resume count in this window, and the window's ms left (it starts at the first resume).
const COUNT_RESUME = `
local key = KEYS[1]
local window_ms = ARGV[1]
local count = redis.call('INCR', key)
if count == 1 then redis.call('PEXPIRE', key, window_ms) end
return {count, redis.call('PTTL', key)}`;

/**
 * Cluster mode (SPEC §12.2): the count lives in Redis under `rr:<cid>`, so a
 * client alternating nodes gets 10 resumes in 10 s in all, not 10 per node.
 * One script call (INCR + PEXPIRE): one round trip per resume, before the
 * upgrade. Redis unreachable: the resume goes on (its takeover then fails,
 * and the handshake becomes a normal connect).
 */
export class RedisResumeRate extends ResumeRate {
  private readonly logger = new Logger(RedisResumeRate.name);
  private readonly countScript;

  constructor(
    private readonly link: RedisLink,
    private readonly names: ClusterNames,
  ) {
    super();
    this.countScript = link.script('gatewayResumeCount', 1, COUNT_RESUME);
  }

  async admit(connectionId: string): Promise<number> {
    if (!this.link.isUp) return 0;
    try {
      const [count, leftMs] = (await this.countScript([this.names.resumeRate(connectionId)], [RESUME_RATE_WINDOW_MS])) as [number, number];
      return count <= RESUMES_PER_WINDOW ? 0 : Math.max(leftMs, 1);
    } catch (err) {
      this.logger.debug({ msg: 'resume count failed', error: (err as Error).message });
      return 0;
    }
  }
}
