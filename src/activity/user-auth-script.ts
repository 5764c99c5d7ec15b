/**
 * Lua (SPEC §8, §14; docs/cluster.md): a refresh on this node changed a
 * user's authorization object. The user's hash takes the new identity header
 * value at once, so whichever node claims the deadline sends it. Only a hash
 * that exists is written: a user Redis does not hold (lost, or gone offline
 * meanwhile) gets it whole from this node's next assert, and no stray hash
 * is left. KEYS: the user hash. ARGV: the identity header value.
 * Returns 1 when written, 0 when the hash was not there.
 */
export const WRITE_USER_AUTH = `local userKey = KEYS[1]
local auth = ARGV[1]
if redis.call('EXISTS', userKey) == 0 then return 0 end
redis.call('HSET', userKey, 'auth', auth)
return 1`;
