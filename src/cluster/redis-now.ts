/** Lua: `now`, Redis `TIME` in epoch ms (one clock for every node, SPEC §7). */
export const REDIS_NOW = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;
