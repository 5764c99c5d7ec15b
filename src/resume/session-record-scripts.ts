/**
 * The Lua scripts of the session records (SPEC §12.5; docs/cluster.md
 * "Resumable sessions"), beside SessionRecords, which runs them. Each runs
 * atomically on one Redis. The older ones build keys from the prefix; the
 * revocation and user-index scripts take every key they touch in KEYS.
 */
import { STATUS_VERSIONS, REDIS_NOW } from '../activity/status-version';

/** A detached or orphaned record outlives its window end by this much (the window itself is in the record). */
export const AFTER_WINDOW_MS = 60_000;
/** How long the digest of an ended session is remembered (a later resume with it counts as `expired`). */
const ENDED_TTL_MS = 60_000;
export const ORPHAN_POLL_MS = 1000;
export const ORPHAN_BATCH = 100;
/** Origin of status changes published by these scripts: no node's, so every node delivers them. */
export const SCRIPT_ORIGIN = '~|';

export const NOW = `${REDIS_NOW}
${STATUS_VERSIONS}`;

/** Moves one connection of user `u` (hash `uk`) from count field `from` to `to`, keeping each node's user set. */
const MOVE_COUNT = `local function move(p, uk, u, from, to)
  if redis.call('HINCRBY', uk, 'c:' .. from, -1) <= 0 then
    redis.call('HDEL', uk, 'c:' .. from)
    if from ~= '*' then redis.call('SREM', p .. 'nu:' .. from, u) end
  end
  redis.call('HINCRBY', uk, 'c:' .. to, 1)
  if to ~= '*' then redis.call('SADD', p .. 'nu:' .. to, u) end
end`;

// The takeover (SPEC §12.5): one step, never waiting for the old holder.
// KEYS: the token's key. ARGV: digest, handler, this node, new digest, attached TTL, prefix.
// Checks digest + window + handler, moves the user's count from the old holder (or from the orphans' '*')
// to this node, swaps the digest, tells the old holder on its node channel. Returns the record's fields.
export const TAKEOVER = `${NOW}
${MOVE_COUNT}
local p = ARGV[6]
local cid = redis.call('GET', KEYS[1])
if not cid then return {'invalid'} end
if cid == '' then return {'expired'} end
local rk = p .. 'rs:' .. cid
local f = redis.call('HGETALL', rk)
local r = {}
for i = 1, #f, 2 do r[f[i]] = f[i + 1] end
if r.x then return {'expired'} end
if r.d ~= ARGV[1] or r.h ~= ARGV[2] or not r.uk then return {'invalid'} end
local w = tonumber(r.w or '0')
if w > 0 and w <= now then return {'expired'} end
local old, me = r.n or '', ARGV[3]
local gen = redis.call('HINCRBY', rk, 'g', 1)
if old ~= me then
  move(p, r.uk, r.u, old == '' and '*' or old, me)
  if old == '' then redis.call('ZREM', p .. 'ro', cid) else redis.call('SREM', p .. 'rn:' .. old, cid) end
  redis.call('SADD', p .. 'rn:' .. me, cid)
  redis.call('PEXPIRE', p .. 'rn:' .. me, tonumber(ARGV[5]) + tonumber(r.wm or '0') + ${AFTER_WINDOW_MS})
end
redis.call('DEL', KEYS[1])
redis.call('SET', p .. 'rt:' .. ARGV[4], cid, 'PX', ARGV[5])
redis.call('HSET', rk, 'd', ARGV[4], 'n', me, 'w', 0)
redis.call('PEXPIRE', rk, ARGV[5])
if old ~= '' and old ~= me then
  redis.call('PUBLISH', p .. 'n:' .. old, '{"f":"' .. me .. '","c":[["session_taken","' .. cid .. '",' .. gen .. ',0]]}')
end
local deadline = redis.call('ZSCORE', p .. 'deadlines', r.uk) or '0'
return {'ok', cid, old, gen, deadline, f}`;

// A node drains or is declared dead (SPEC §12.5): its resumable sessions are detached from now on
// (or keep the window end they have), held by no node: their counts move to the user's '*' field.
// ARGV: node, prefix, reaping '1' (nothing if the node is alive again) | '0'.
export const ORPHAN = `${NOW}
${MOVE_COUNT}
local p, node = ARGV[2], ARGV[1]
if ARGV[3] == '1' and redis.call('EXISTS', p .. 'alive:' .. node) == 1 then return 0 end
local set = p .. 'rn:' .. node
local n = 0
for _, cid in ipairs(redis.call('SMEMBERS', set)) do
  local rk = p .. 'rs:' .. cid
  local r = redis.call('HMGET', rk, 'n', 'w', 'wm', 'uk', 'u', 'd')
  if r[1] == node then
    local w = tonumber(r[2] or '0')
    if w == 0 then w = now + tonumber(r[3]) end
    if w > now then
      redis.call('HSET', rk, 'n', '', 'w', w)
      redis.call('PEXPIREAT', rk, w + ${AFTER_WINDOW_MS})
      redis.call('PEXPIREAT', p .. 'rt:' .. r[6], w + ${AFTER_WINDOW_MS})
      move(p, r[4], r[5], node, '*')
      redis.call('ZADD', p .. 'ro', w, cid)
      n = n + 1
    end
  end
end
redis.call('DEL', set)
return n`;

/**
 * A user's hash `uk` lost its orphans' count ('*') of one session: a user
 * left without connections while `inactive` goes `offline` (SPEC §8).
 */
export const ORPHAN_LEAVES = `local function orphanLeaves(uk, deadlines, sv, now, origin)
  if redis.call('HINCRBY', uk, 'c:*', -1) <= 0 then redis.call('HDEL', uk, 'c:*') end
  local total, s, ver = 0, false, 0
  local fields = redis.call('HGETALL', uk)
  for i = 1, #fields, 2 do
    local k, v = fields[i], fields[i + 1]
    if k:sub(1, 2) == 'c:' then total = total + tonumber(v)
    elseif k == 's' then s = v elseif k == 'ver' then ver = tonumber(v) end
  end
  if total <= 0 and s == 'inactive' then
    ver = offlineVersion(now, ver, sv)
    redis.call('DEL', uk)
    redis.call('ZREM', deadlines, uk)
    redis.call('PUBLISH', uk, origin .. '["offline",' .. ver .. ']')
  end
end`;

/** Ends an orphaned session `cid` (record key `rk`, fields r = {n, uk, d, us}) as if its connection closed now (SPEC §12.2, §8). */
const END_ORPHAN = `${ORPHAN_LEAVES}
local function endOrphan(p, cid, rk, r, now, origin)
  redis.call('DEL', rk)
  redis.call('ZREM', p .. 'ro', cid)
  redis.call('SET', p .. 'rt:' .. r[3], '', 'PX', ${ENDED_TTL_MS})
  if r[4] then redis.call('SREM', r[4], cid) end
  orphanLeaves(r[2], p .. 'deadlines', p .. 'sv', now, origin)
end`;

// Orphaned sessions whose window ended: each ends as if its connection closed then.
// ARGV: prefix, batch, origin head.
export const END_ORPHANS = `${NOW}
${END_ORPHAN}
local p = ARGV[1]
local out = {}
for _, cid in ipairs(redis.call('ZRANGEBYSCORE', p .. 'ro', '-inf', now, 'LIMIT', 0, tonumber(ARGV[2]))) do
  redis.call('ZREM', p .. 'ro', cid)
  local rk = p .. 'rs:' .. cid
  local r = redis.call('HMGET', rk, 'n', 'uk', 'd', 'us')
  if r[1] == '' and r[2] then
    endOrphan(p, cid, rk, r, now, ARGV[3])
    table.insert(out, cid)
  end
end
return out`;

// A /v1 command for a session held by no node (SPEC §12.2: it applies to the detached session).
// ARGV: prefix, cid, op 'set'|'add'|'del'|'watch'|'end', field, value, origin head ('add': only when the field is not there).
// Returns the holder when a node holds it (the command goes there), '' when applied, false without a session.
export const EDIT_ORPHAN = `${NOW}
${END_ORPHAN}
local p, cid, op = ARGV[1], ARGV[2], ARGV[3]
local rk = p .. 'rs:' .. cid
local n = redis.call('HGET', rk, 'n')
if not n then return false end
if n ~= '' then return n end
if op == 'set' then redis.call('HSET', rk, ARGV[4], ARGV[5])
elseif op == 'add' then redis.call('HSETNX', rk, ARGV[4], ARGV[5])
elseif op == 'del' then redis.call('HDEL', rk, ARGV[4])
elseif op == 'watch' then
  local list = {}
  local seen = {}
  local cur = redis.call('HGET', rk, 'wu')
  if cur then for _, u in ipairs(cjson.decode(cur)) do if not seen[u] then seen[u] = true; table.insert(list, u) end end end
  for _, u in ipairs(cjson.decode(ARGV[5])) do if not seen[u] then seen[u] = true; table.insert(list, u) end end
  redis.call('HSET', rk, 'wu', #list == 0 and '[]' or cjson.encode(list))
elseif op == 'end' then
  endOrphan(p, cid, rk, redis.call('HMGET', rk, 'n', 'uk', 'd', 'us'), now, ARGV[6])
end
return ''`;

// A session's record written by its holder: when it starts, and again after a Redis reconnection
// (its subscriptions then follow from scratch: the t: and l: fields go first). Nothing when another node
// holds the session (it was taken over meanwhile), and -1 when it was revoked (SPEC §12.6: its end mark
// is there; the holder ends its copy). The authorization answer is kept once (field a; the identity
// header is derived from it). KEYS: record, token key, node's sessions, the user's sessions.
// ARGV: node, attached TTL, digest, user, auth JSON, handler, window ms, user hash key,
// window end (0: attached), connection id, '1' to clear the subscriptions, authorization end (SPEC §14, epoch ms;
// 0: none; written again on every refresh, with the refreshed answer as a).
export const WRITE_START = `if redis.call('HEXISTS', KEYS[1], 'x') == 1 then return -1 end
local n = redis.call('HGET', KEYS[1], 'n')
if n and n ~= ARGV[1] then return 0 end
if ARGV[11] == '1' then
  for _, f in ipairs(redis.call('HKEYS', KEYS[1])) do
    local k = f:sub(1, 2)
    if k == 't:' or k == 'l:' then redis.call('HDEL', KEYS[1], f) end
  end
end
redis.call('HSET', KEYS[1], 'd', ARGV[3], 'u', ARGV[4], 'a', ARGV[5], 'h', ARGV[6], 'n', ARGV[1], 'w', ARGV[9], 'wm', ARGV[7], 'uk', ARGV[8], 'us', KEYS[4], 'ae', ARGV[12])
redis.call('HDEL', KEYS[1], 'i')
local w = tonumber(ARGV[9])
if w > 0 then
  redis.call('PEXPIREAT', KEYS[1], w + ${AFTER_WINDOW_MS})
  redis.call('SET', KEYS[2], ARGV[10], 'PXAT', w + ${AFTER_WINDOW_MS})
else
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('SET', KEYS[2], ARGV[10], 'PX', ARGV[2])
end
local keep = tonumber(ARGV[2]) + tonumber(ARGV[7]) + ${AFTER_WINDOW_MS}
redis.call('SADD', KEYS[3], ARGV[10])
redis.call('PEXPIRE', KEYS[3], keep)
redis.call('SADD', KEYS[4], ARGV[10])
if redis.call('PTTL', KEYS[4]) < keep then redis.call('PEXPIRE', KEYS[4], keep) end
return 1`;

// A change of a held session's record (subscriptions, window end), written only while this node
// holds it: a copy that another node took over (its notice not read yet) must not write into the
// record, nor a record that ended create a key without expiry.
// KEYS: the record. ARGV: this node, window end ('' = none), how many fields to set (n), n field/value
// pairs, then the fields to delete. Returns 1 when written, 0 when the record is gone, else the holder.
export const WRITE_CHANGE = `local n = redis.call('HGET', KEYS[1], 'n')
if not n then return 0 end
if n ~= ARGV[1] then return n end
local sets = tonumber(ARGV[3])
-- One call per field: a session may change thousands of topics in a tick (unpack has a stack limit).
for i = 4, 3 + 2 * sets, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
for i = 4 + 2 * sets, #ARGV do redis.call('HDEL', KEYS[1], ARGV[i]) end
if ARGV[2] ~= '' then
  redis.call('HSET', KEYS[1], 'w', ARGV[2])
  redis.call('PEXPIREAT', KEYS[1], tonumber(ARGV[2]) + ${AFTER_WINDOW_MS})
end
return 1`;
