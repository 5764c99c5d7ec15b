/**
 * Lua shared by every script that changes a user's status (presence here,
 * orphaned resumable sessions in resume/): Redis' clock, and the version of a
 * status change (SPEC §7: one clock for all nodes).
 */

/** Lua: `now`, Redis `TIME` in epoch ms. */
export const REDIS_NOW = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

/**
 * Lua: `nextVersion(now, ver, clock)`, the version of a status change: after
 * Redis' time, after the user's last version `ver`, and after every version
 * given so far (`clock`, the key `ClusterNames.statusClock`). A user's `ver`
 * goes with its hash when it goes offline; without the clock a user back in
 * the same millisecond got a version no greater than its `offline`, and every
 * watcher kept it offline (a newer version wins; a tie goes to `offline`, §6.2).
 */
export const NEXT_STATUS_VERSION = `local function nextVersion(now, ver, clock)
  local v = math.max(now, ver + 1, (tonumber(redis.call('GET', clock)) or 0) + 1)
  redis.call('SET', clock, v)
  return v
end`;
