/**
 * The Lua scripts of the session records (SPEC §12.5; docs/cluster.md
 * "Resumable sessions"), beside SessionRecords, which runs them. Each runs
 * atomically in one partition, its user's (SPEC §13.3): every key it touches
 * arrives in KEYS, named by ClusterNames, and it builds none. What a node
 * must be told (a session taken from it) the script returns, and the node
 * that ran it sends it.
 */
import { STATUS_VERSIONS } from '../activity/status-version';
import { REDIS_NOW } from '../cluster/redis-now';

/** A detached or orphaned record outlives its window end by this much (the window itself is in the record). */
export const AFTER_WINDOW_MS = 60_000;
/** How long the token of an ended session is remembered (a later resume with it counts as `expired`). */
const ENDED_TTL_MS = 60_000;
export const ORPHAN_POLL_MS = 1000;
export const ORPHAN_BATCH = 100;
/** Origin of status changes published by these scripts: no node's, so every node delivers them. */
export const SCRIPT_ORIGIN = '~|';

export const NOW = `${REDIS_NOW}
${STATUS_VERSIONS}`;

/**
 * Lua, SPEC §12.6: a record keeps `p:<node>` for each node the session was
 * taken from while its socket there may still be open (the record said
 * attached) until that node lets its copy go. A revocation commands those
 * nodes too: their takeover notice travels on the control instance, topic
 * messages on the topic's shard, so a notice can come after a message
 * published after the revocation's 204. `previousHolders(rk)` lists them.
 */
export const PREVIOUS_HOLDERS = `local function previousHolders(rk)
  local out = {}
  for _, f in ipairs(redis.call('HKEYS', rk)) do
    if f:sub(1, 2) == 'p:' then table.insert(out, f:sub(3)) end
  end
  return out
end`;

/**
 * Lua: node `node` let its copy of the session of record `rk` go. A revoked
 * session (field `x`) whose holder confirmed its end (`x` = '') and that no
 * node it was taken from still holds leaves the user's sessions set
 * `userSessions` (SPEC §12.6: a user-wide revocation retried asks them again
 * until then).
 */
const LET_GO = `${PREVIOUS_HOLDERS}
local function letGo(rk, userSessions, cid, node)
  redis.call('HDEL', rk, 'p:' .. node)
  if redis.call('HGET', rk, 'x') == '' and #previousHolders(rk) == 0 then redis.call('SREM', userSessions, cid) end
end`;

/**
 * Lua: the session of record `rk` ended (its connection closed, or its
 * window ended while no node held it): the record goes, and its token's
 * digest is kept in the partition's ended tokens `endedTokens` for
 * {@link ENDED_TTL_MS}, so a later resume with it counts as `expired`
 * (those older than that are dropped on the way).
 */
const END_SESSION = `local function endSession(rk, endedTokens, now)
  local digest = redis.call('HGET', rk, 'd')
  if digest then
    redis.call('ZREMRANGEBYSCORE', endedTokens, '-inf', now)
    redis.call('ZADD', endedTokens, now + ${ENDED_TTL_MS}, digest)
    redis.call('PEXPIRE', endedTokens, ${ENDED_TTL_MS})
  end
  redis.call('DEL', rk)
end`;

// The takeover (SPEC §12.5): one step, never waiting for the old holder.
// KEYS: the presented token's key, the record, the new token's key, the user hash, this node's users and
// sessions (of the user's partition), the partition's orphans, deadlines and ended tokens.
// ARGV: digest, handler, this node, new digest, attached TTL, connection id and user id (as the token
// and the connection index name them; checked against the record), the session's member in the sets.
// Checks digest + window + handler, moves the user's count from the old holder (or from the orphans' '*')
// to this node, swaps the digest. The old holder drops the session from its own set when told (the node
// that ran this tells it); taken while the record said attached (its socket there may be half-open), it is
// kept as p:<old holder> until then (SPEC §12.6: a revocation commands it too). Returns the record's fields
// and the old holder.
export const TAKEOVER = `${NOW}
local tokenKey, rk, newTokenKey, userKey, myUsers, mySessions, orphans, deadlines, endedTokens = unpack(KEYS)
local digest, handler, me, newDigest, attachedTtl, cid, user, member = unpack(ARGV)
local ended = redis.call('ZSCORE', endedTokens, digest)
if ended and tonumber(ended) > now then return {'expired'} end
local named = redis.call('GET', tokenKey)
if not named or named ~= cid then return {'invalid'} end
local f = redis.call('HGETALL', rk)
local r = {}
for i = 1, #f, 2 do r[f[i]] = f[i + 1] end
if r.x then return {'expired'} end
if r.d ~= digest or r.h ~= handler or r.u ~= user then return {'invalid'} end
local w = tonumber(r.w or '0')
if w > 0 and w <= now then return {'expired'} end
local old = r.n or ''
local keep = tonumber(attachedTtl) + tonumber(r.wm or '0') + ${AFTER_WINDOW_MS}
local gen = redis.call('HINCRBY', rk, 'g', 1)
redis.call('HDEL', rk, 'p:' .. me)
if old ~= '' and old ~= me and w == 0 then redis.call('HSET', rk, 'p:' .. old, 1) end
if old ~= me then
  local from = 'c:' .. (old == '' and '*' or old)
  if redis.call('HINCRBY', userKey, from, -1) <= 0 then redis.call('HDEL', userKey, from) end
  redis.call('HINCRBY', userKey, 'c:' .. me, 1)
  redis.call('SADD', myUsers, user)
  if old == '' then redis.call('ZREM', orphans, member) end
  redis.call('SADD', mySessions, member)
  redis.call('PEXPIRE', mySessions, keep)
end
redis.call('DEL', tokenKey)
redis.call('SET', newTokenKey, cid, 'PX', keep)
redis.call('HSET', rk, 'd', newDigest, 'n', me, 'w', 0)
redis.call('PEXPIRE', rk, attachedTtl)
local deadline = redis.call('ZSCORE', deadlines, userKey) or '0'
return {'ok', cid, old, gen, deadline, f}`;

// A node drains or is declared dead (SPEC §12.5): one of its resumable sessions (a member of its set of the
// partition) is detached from now on (or keeps the window end it has), held by no node: its count moves to
// the user's '*' field. KEYS: the record, the user hash, the node's users and sessions of the partition, the
// partition's orphans. ARGV: node, member, user id. Returns 1 when orphaned.
export const ORPHAN = `${NOW}
local rk, userKey, nodeUsers, nodeSessions, orphans = unpack(KEYS)
local node, member, user = unpack(ARGV)
redis.call('SREM', nodeSessions, member)
local r = redis.call('HMGET', rk, 'n', 'w', 'wm', 'u')
if r[1] ~= node or r[4] ~= user then return 0 end
local w = tonumber(r[2] or '0')
if w == 0 then w = now + tonumber(r[3]) end
if w <= now then return 0 end
redis.call('HSET', rk, 'n', '', 'w', w)
redis.call('PEXPIREAT', rk, w + ${AFTER_WINDOW_MS})
local from = 'c:' .. node
if redis.call('HINCRBY', userKey, from, -1) <= 0 then
  redis.call('HDEL', userKey, from)
  redis.call('SREM', nodeUsers, user)
end
redis.call('HINCRBY', userKey, 'c:*', 1)
redis.call('ZADD', orphans, w, member)
return 1`;

/**
 * Lua: a user's hash `userKey` lost its orphans' count ('*') of one session:
 * a user left without connections while `inactive` goes `offline` (SPEC §8).
 */
export const ORPHAN_LEAVES = `local function orphanLeaves(userKey, deadlines, floor, now, origin)
  if redis.call('HINCRBY', userKey, 'c:*', -1) <= 0 then redis.call('HDEL', userKey, 'c:*') end
  local total, s, ver = 0, false, 0
  local fields = redis.call('HGETALL', userKey)
  for i = 1, #fields, 2 do
    local k, v = fields[i], fields[i + 1]
    if k:sub(1, 2) == 'c:' then total = total + tonumber(v)
    elseif k == 's' then s = v elseif k == 'ver' then ver = tonumber(v) end
  end
  if total <= 0 and s == 'inactive' then
    ver = offlineVersion(now, ver, floor)
    redis.call('DEL', userKey)
    redis.call('ZREM', deadlines, userKey)
    redis.call('PUBLISH', userKey, origin .. '["offline",' .. ver .. ']')
  end
end`;

// An orphaned session ends as if its connection closed now (SPEC §12.2, §8): its window ended (PartitionWalk.due
// found its member; checked again here), or a /v1 disconnect came for it. KEYS: the record, the partition's
// orphans, the user's sessions, the user hash, the partition's deadlines, status floor and ended tokens.
// ARGV: member, connection id, user id, origin head, '1' to end it only if its window is over.
// Returns 1 when ended.
export const END_ORPHAN = `${NOW}
${ORPHAN_LEAVES}
${END_SESSION}
local rk, orphans, userSessions, userKey, deadlines, floor, endedTokens = unpack(KEYS)
local member, cid, user, origin, whenDue = unpack(ARGV)
if whenDue == '1' then
  local due = redis.call('ZSCORE', orphans, member)
  if not due or tonumber(due) > now then return 0 end
end
redis.call('ZREM', orphans, member)
local r = redis.call('HMGET', rk, 'n', 'u')
if r[1] ~= '' or r[2] ~= user then return 0 end
endSession(rk, endedTokens, now)
redis.call('SREM', userSessions, cid)
orphanLeaves(userKey, deadlines, floor, now, origin)
return 1`;

// A /v1 command for a session held by no node (SPEC §12.2: it applies to the detached session); its end is
// END_ORPHAN. KEYS: the record. ARGV: op 'set'|'add'|'del'|'watch', field, value ('add': only when the field
// is not there). Returns the holder when a node holds it (the command goes there), '' when applied, false
// without a session.
export const EDIT_ORPHAN = `local rk = KEYS[1]
local op, field, value = unpack(ARGV)
local n = redis.call('HGET', rk, 'n')
if not n then return false end
if n ~= '' then return n end
if op == 'set' then redis.call('HSET', rk, field, value)
elseif op == 'add' then redis.call('HSETNX', rk, field, value)
elseif op == 'del' then redis.call('HDEL', rk, field)
elseif op == 'watch' then
  local list = {}
  local seen = {}
  local cur = redis.call('HGET', rk, 'wu')
  if cur then for _, u in ipairs(cjson.decode(cur)) do if not seen[u] then seen[u] = true; table.insert(list, u) end end end
  for _, u in ipairs(cjson.decode(value)) do if not seen[u] then seen[u] = true; table.insert(list, u) end end
  redis.call('HSET', rk, 'wu', #list == 0 and '[]' or cjson.encode(list))
end
return ''`;

// The connection of a session this node holds closed for good (SPEC §12.5): the record's step of its end,
// before its count leaves (activity/redis-activity.ts). The session ends here only while this node holds it
// (another took it over, with its count, or it was orphaned by a reaper: nothing leaves here); its record
// goes and its token is remembered as ended. A revoked one (SPEC §12.6: its record is its end mark, field
// x = the node that held it then) leaves only from that node, which so confirms the end; it leaves the
// user's sessions once no node it was taken from holds a copy either (p:<node>). A copy here of a session
// another node holds (or held when revoked) lets go of it.
// KEYS: the record, the partition's ended tokens, this node's sessions of the partition, the user's sessions.
// ARGV: node, connection id, member. Returns 1 when its connection leaves here, else 0.
export const ENDED = `${REDIS_NOW}
${END_SESSION}
${LET_GO}
local rk, endedTokens, nodeSessions, userSessions = unpack(KEYS)
local node, cid, member = unpack(ARGV)
local r = redis.call('HMGET', rk, 'n', 'x')
if r[1] and r[1] ~= node then
  redis.call('HDEL', rk, 'p:' .. node)
  return 0
end
if r[2] and r[2] ~= node then
  redis.call('SREM', nodeSessions, member)
  letGo(rk, userSessions, cid, node)
  return 0
end
redis.call('SREM', nodeSessions, member)
if r[1] then
  endSession(rk, endedTokens, now)
  redis.call('SREM', userSessions, cid)
elseif r[2] then
  redis.call('HSET', rk, 'x', '')
  letGo(rk, userSessions, cid, node)
else
  redis.call('SREM', userSessions, cid)
end
return 1`;

// Another node took the session over (its notice came here) or holds it (a write here found it there), or it
// was revoked while taken from here: this node let its copy go. The session leaves this node's set, and this
// node's p: field (SPEC §12.6). KEYS: the record, this node's sessions of the partition, the user's sessions.
// ARGV: node, member, connection id.
export const RELEASED = `${LET_GO}
local rk, nodeSessions, userSessions = unpack(KEYS)
local node, member, cid = unpack(ARGV)
redis.call('SREM', nodeSessions, member)
letGo(rk, userSessions, cid, node)
return 1`;

// A session's record written by its holder: when it starts, and again after a Redis reconnection
// (its subscriptions then follow from scratch: the t: and l: fields go first). Nothing when another node
// holds the session (it was taken over meanwhile), and -1 when it was revoked (SPEC §12.6: its end mark
// is there; the holder ends its copy). The authorization answer is kept once (field a; the identity
// header is derived from it). KEYS: record, token key, node's sessions of the partition, the user's sessions.
// ARGV: node, attached TTL, digest, user, auth JSON, handler, window ms, window end (0: attached),
// connection id, '1' to clear the subscriptions, authorization end (SPEC §14, epoch ms; 0: none; written
// again on every refresh, with the refreshed answer as a), the session's member in the node's set.
export const WRITE_START = `local rk, tokenKey, nodeSessions, userSessions = unpack(KEYS)
local node, attachedTtl, digest, user, auth, handler, windowMs, windowEnd, cid, clear, authEnd, member = unpack(ARGV)
if redis.call('HEXISTS', rk, 'x') == 1 then return -1 end
local n = redis.call('HGET', rk, 'n')
if n and n ~= node then return 0 end
if clear == '1' then
  for _, f in ipairs(redis.call('HKEYS', rk)) do
    local k = f:sub(1, 2)
    if k == 't:' or k == 'l:' then redis.call('HDEL', rk, f) end
  end
end
redis.call('HSET', rk, 'd', digest, 'u', user, 'a', auth, 'h', handler, 'n', node, 'w', windowEnd, 'wm', windowMs, 'ae', authEnd)
redis.call('HDEL', rk, 'i')
local keep = tonumber(attachedTtl) + tonumber(windowMs) + ${AFTER_WINDOW_MS}
local w = tonumber(windowEnd)
if w > 0 then
  redis.call('PEXPIREAT', rk, w + ${AFTER_WINDOW_MS})
  redis.call('SET', tokenKey, cid, 'PXAT', w + ${AFTER_WINDOW_MS})
else
  redis.call('PEXPIRE', rk, attachedTtl)
  redis.call('SET', tokenKey, cid, 'PX', keep)
end
redis.call('SADD', nodeSessions, member)
redis.call('PEXPIRE', nodeSessions, keep)
redis.call('SADD', userSessions, cid)
if redis.call('PTTL', userSessions) < keep then redis.call('PEXPIRE', userSessions, keep) end
return 1`;

// A change of a held session's record (subscriptions, window end), written only while this node
// holds it: a copy that another node took over (its notice not read yet) must not write into the
// record, nor a record that ended create a key without expiry.
// KEYS: the record. ARGV: this node, window end ('' = none), how many fields to set (n), n field/value
// pairs, then the fields to delete. Returns 1 when written, 0 when the record is gone, else the holder.
export const WRITE_CHANGE = `local rk = KEYS[1]
local node, windowEnd, sets = ARGV[1], ARGV[2], tonumber(ARGV[3])
local n = redis.call('HGET', rk, 'n')
if not n then return 0 end
if n ~= node then return n end
-- One call per field: a session may change thousands of topics in a tick (unpack has a stack limit).
for i = 4, 3 + 2 * sets, 2 do redis.call('HSET', rk, ARGV[i], ARGV[i + 1]) end
for i = 4 + 2 * sets, #ARGV do redis.call('HDEL', rk, ARGV[i]) end
if windowEnd ~= '' then
  redis.call('HSET', rk, 'w', windowEnd)
  redis.call('PEXPIREAT', rk, tonumber(windowEnd) + ${AFTER_WINDOW_MS})
end
return 1`;
