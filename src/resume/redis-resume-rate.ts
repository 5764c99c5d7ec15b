import { Logger } from '@nestjs/common';
import { ClusterNames } from '../cluster/channels';
import { RedisShards } from '../cluster/redis-shards';
import { RESUMES_PER_WINDOW, RESUME_RATE_WINDOW_MS, ResumeRate } from './resume-rate';

// KEYS: the session's resume count. Its count in this window and the window's ms left.
const READ_RESUMES = `#!lua flags=no-writes
local key = KEYS[1]
return {tonumber(redis.call('GET', key) or '0'), redis.call('PTTL', key)}`;

// KEYS: the session's resume count. ARGV: window ms. One more resume (the window starts at the first).
const COUNT_RESUME = `
local key = KEYS[1]
local window_ms = ARGV[1]
if redis.call('INCR', key) == 1 then redis.call('PEXPIRE', key, window_ms) end
return 1`;

/**
 * Cluster mode (SPEC §12.2): the count lives in Redis under `rr:<cid>`, so a
 * client alternating nodes gets 10 resumes in 10 s in all, not 10 per node.
 * One read before the upgrade (one round trip per resume); a resume that
 * succeeded is counted after it, not awaited (INCR + PEXPIRE). Redis
 * unreachable: the resume goes on (its takeover then fails, and the
 * handshake becomes a normal connect).
 */
export class RedisResumeRate extends ResumeRate {
  private readonly logger = new Logger(RedisResumeRate.name);
  private readonly readScript;
  private readonly countScript;

  constructor(
    /** A connection's count lives on its partition's link (SPEC §13.4). */
    private readonly shards: RedisShards,
    private readonly names: ClusterNames,
  ) {
    super();
    this.readScript = shards.script('gatewayResumeRead', 1, READ_RESUMES);
    this.countScript = shards.script('gatewayResumeCount', 1, COUNT_RESUME);
  }

  async admit(connectionId: string): Promise<number> {
    if (!this.shards.ofName(connectionId).isUp) return 0;
    try {
      const [count, leftMs] = (await this.readScript([this.names.resumeRate(connectionId)], [])) as [number, number];
      return count < RESUMES_PER_WINDOW ? 0 : Math.max(leftMs, 1);
    } catch (err) {
      this.logger.debug({ msg: 'resume count not read', error: (err as Error).message });
      return 0;
    }
  }

  resumed(connectionId: string): void {
    if (!this.shards.ofName(connectionId).isUp) return;
    this.countScript([this.names.resumeRate(connectionId)], [RESUME_RATE_WINDOW_MS]).catch((err: Error) =>
      this.logger.debug({ msg: 'resume not counted', error: err.message }),
    );
  }
}
