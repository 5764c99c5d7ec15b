/**
 * Lua shared by every script that changes a user's status (presence here,
 * orphaned resumable sessions in resume/): the version of a status change,
 * from Redis' clock (cluster/redis-now.ts; SPEC §7: one clock for all nodes).
 */

/**
 * Lua: the version of a status change, Redis' time unless the user's last
 * version `ver` is not older. A user going offline leaves Redis with its hash
 * (and its `ver`), so `offlineVersion` also keeps the highest such version in
 * `floor` (the partition's key `ClusterNames.statusFloor`), and `nextVersion` for a user
 * Redis does not hold (`ver` 0) starts above it: a user back within the
 * millisecond of its `offline` used to get an equal version, and every watcher
 * kept it offline (a newer version wins; a tie goes to `offline`, §6.2).
 * Only offline versions raise the floor, so versions stay at Redis' time
 * however many users change at once.
 */
export const STATUS_VERSIONS = `local function nextVersion(now, ver, floor)
  if ver > 0 then return math.max(now, ver + 1) end
  return math.max(now, (tonumber(redis.call('GET', floor)) or 0) + 1)
end
local function offlineVersion(now, ver, floor)
  local v = math.max(now, ver + 1)
  if v > (tonumber(redis.call('GET', floor)) or 0) then redis.call('SET', floor, v) end
  return v
end`;
