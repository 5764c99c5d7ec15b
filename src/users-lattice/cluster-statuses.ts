import { ClusterNames } from '../cluster/channels';
import { RedisLink } from '../cluster/redis-link';
import { KeyedCommand, RedisShards } from '../cluster/redis-shards';
import type { PresenceStatus } from '../activity/activity.service';

/** `[version, status]`: the status register of SPEC §7. */
export type StatusRegister = readonly [version: number, status: PresenceStatus];

const STATUSES: ReadonlySet<string> = new Set(['active', 'inactive', 'offline']);

/**
 * A user channel message `["<status>", <version>]` (written by the presence
 * scripts in activity/redis-activity.ts); null when malformed.
 */
export function parseStatusMessage(payload: Buffer): StatusRegister | null {
  try {
    const value: unknown = JSON.parse(payload.toString('utf8'));
    if (Array.isArray(value) && STATUSES.has(value[0] as string) && typeof value[1] === 'number')
      return [value[1], value[0] as PresenceStatus];
  } catch {
    // ignored below
  }
  return null;
}

/**
 * The current status of each user, read from the user hashes in one round
 * trip. A user Redis does not hold is `offline` with `missingVersion`: 0 for
 * a user never seen (SPEC §7); just before Redis' own time after an outage,
 * when Redis may have forgotten users that left meanwhile.
 */
export async function readStatuses(
  shards: RedisShards,
  names: ClusterNames,
  userIds: readonly string[],
  missingVersion = 0,
): Promise<Map<string, StatusRegister>> {
  const replies = await shards.pipeline(
    'hmget',
    userIds.map((userId): KeyedCommand => ['hmget', names.channel('u', userId), 's', 'ver']),
  );
  const out = new Map<string, StatusRegister>();
  userIds.forEach((userId, i) => {
    const [status, version] = (replies[i]?.[1] ?? [null, null]) as [string | null, string | null];
    out.set(
      userId,
      status !== null && STATUSES.has(status)
        ? [Number(version), status as PresenceStatus]
        : [missingVersion, 'offline'],
    );
  });
  return out;
}

/** Redis' clock in epoch ms (the one clock of status versions, SPEC §7: a user's, on its partition's link). */
export async function redisTimeMs(link: RedisLink): Promise<number> {
  const [seconds, micros] = await link.command.time();
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}
