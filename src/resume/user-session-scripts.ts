/**
 * The Lua scripts over one user's resumable sessions in Redis (SPEC §12.2,
 * §12.6): revocation, and endpoint 8 for the sessions no node holds. Each
 * takes every key it touches in KEYS, all in the user's partition
 * (SPEC §13.3), and builds none.
 */
import { NOW, ORPHAN_LEAVES, PREVIOUS_HOLDERS } from './session-record-scripts';

/**
 * How long a revoked session's record stays as its end mark (SPEC §12.6: the
 * end outlives the window): fields `x` (the node that held it then, '' for
 * none) and `u`. Every takeover and every rewrite by a returning holder finds
 * it; a holder cut off from Redis for longer could write the session again.
 */
export const REVOKED_TTL_MS = 24 * 3600_000;

/**
 * Lua: whether the user's sessions set KEYS[1] holds exactly the connection
 * ids the caller read (ARGV[first…last]), whose records are KEYS[2…]: a
 * session that started in between makes the caller read again.
 */
const SAME_MEMBERS = `local function sameMembers(first, last)
  local given = {}
  for i = first, last do given[ARGV[i]] = true end
  for _, cid in ipairs(redis.call('SMEMBERS', KEYS[1])) do
    if not given[cid] then return false end
  end
  return true
end`;

// Endpoint 8 (SPEC §7, §12.2) for the sessions of one user held by no node and subscribed to the users lattice:
// only that user's sessions are read. KEYS: the user's sessions set, then the record of each. ARGV: JSON list of
// users to add, then the connection ids (as KEYS[2…]). Returns 'retry' when the set changed since it was read.
export const WATCH_USER_ORPHANS = `${SAME_MEMBERS}
if not sameMembers(2, #ARGV) then return 'retry' end
local adds = cjson.decode(ARGV[1])
for i = 2, #KEYS do
  local rk = KEYS[i]
  local r = redis.call('HMGET', rk, 'n', 'wu', 'x')
  if not r[1] and not r[3] then
    redis.call('SREM', KEYS[1], ARGV[i])
  elseif r[1] == '' and r[2] then
    local list, seen = {}, {}
    for _, u in ipairs(cjson.decode(r[2])) do if not seen[u] then seen[u] = true; table.insert(list, u) end end
    for _, u in ipairs(adds) do if not seen[u] then seen[u] = true; table.insert(list, u) end end
    redis.call('HSET', rk, 'wu', #list == 0 and '[]' or cjson.encode(list))
  end
end
return 'ok'`;

/**
 * Lua: revoke one session (SPEC §12.6) whose record is `rk`, in the user's
 * sessions set `us`: the record becomes its end mark (`x` = the node holding
 * it now, '' for none; `u`; and the `p:<node>` of the nodes it was taken
 * from that may still hold a copy), which every takeover and every rewrite
 * checks, for {@link REVOKED_TTL_MS}. An orphan ends here as its window end
 * would (its '*' count goes); a held one keeps its count, and any revoked
 * one its place in `us`, until its holder and those nodes end their copies
 * (the record's end and let-go steps). `member` is the session's member of
 * the orphans `ro`. Returns the holder ('' none) and the list of those
 * nodes, or false when Redis has no record of the session.
 */
const REVOKE_ONE = `${ORPHAN_LEAVES}
${PREVIOUS_HOLDERS}
local function revoke(rk, cid, member, us, uk, ro, deadlines, sv, now, origin)
  local r = redis.call('HMGET', rk, 'n', 'x', 'u')
  if r[2] then return r[2], previousHolders(rk) end
  if not r[1] then return false, {} end
  local holder, previous = r[1], previousHolders(rk)
  redis.call('DEL', rk)
  redis.call('HSET', rk, 'x', holder, 'u', r[3] or '')
  for _, node in ipairs(previous) do redis.call('HSET', rk, 'p:' .. node, 1) end
  redis.call('PEXPIRE', rk, ${REVOKED_TTL_MS})
  if holder == '' then
    redis.call('ZREM', ro, member)
    if #previous == 0 then redis.call('SREM', us, cid) end
    orphanLeaves(uk, deadlines, sv, now, origin)
  end
  return holder, previous
end`;

// DELETE /v1/connection/<cid> (SPEC §12.6). KEYS: the record, the user's sessions set, the user's hash,
// the partition's orphans, deadlines and status floor. ARGV: connection id, its member, origin head.
// Returns {holder, previous holder…} (holder '' when no node holds it), or {} when Redis has no record of it.
export const REVOKE = `${NOW}
${REVOKE_ONE}
local rk, userSessions, userKey, orphans, deadlines, floor = unpack(KEYS)
local cid, member, origin = unpack(ARGV)
local holder, previous = revoke(rk, cid, member, userSessions, userKey, orphans, deadlines, floor, now, origin)
if holder == false then return {} end
table.insert(previous, 1, holder)
return previous`;

// DELETE /v1/user/<user>/connections (SPEC §12.6) for every session of the user Redis has a record of.
// KEYS: the user's sessions set, the user's hash, the partition's orphans, deadlines and status floor, then
// the record of each session. ARGV: origin head, then the connection ids (as KEYS[6…]), then their members
// (in the same order). Returns 'retry' when the set changed since it was read, else {{cid, holder, previous
// holder…}, …} for the sessions a node may still hold a copy of (holder '' when none holds it): each such
// node must end its copy.
export const REVOKE_USER = `${NOW}
${REVOKE_ONE}
${SAME_MEMBERS}
local userSessions, userKey, orphans, deadlines, floor = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local origin, count = ARGV[1], #KEYS - 5
if not sameMembers(2, 1 + count) then return 'retry' end
local out = {}
for i = 6, #KEYS do
  local cid, member = ARGV[i - 4], ARGV[i - 4 + count]
  local holder, previous = revoke(KEYS[i], cid, member, userSessions, userKey, orphans, deadlines, floor, now, origin)
  if holder == false then
    redis.call('SREM', KEYS[1], cid)
  elseif holder ~= '' or #previous > 0 then
    table.insert(previous, 1, holder)
    table.insert(previous, 1, cid)
    table.insert(out, previous)
  end
end
return out`;
