import { Logger } from '@nestjs/common';
import { ClusterNames } from '../cluster/channels';
import { RedisLink } from '../cluster/redis-link';

/** A topic position as a record keeps it: `[offset, epoch]`, epoch null before the topic's first publish. */
export type RecordedPosition = readonly [offset: number, epoch: string | null];

/** What a session is subscribed to (SPEC §12.2), as the record keeps it. */
export interface SessionSubscriptions {
  /** Topic (path form) → the position at which the session subscribed to it. */
  readonly topics: ReadonlyMap<string, RecordedPosition>;
  readonly namespaces: readonly string[];
  /** The `gateway.user` watch list; null when not subscribed. */
  readonly watch: readonly string[] | null;
}

/** Everything a node needs to rebuild a session it takes over (SPEC §12.3, §12.5). */
export interface SessionRecord extends SessionSubscriptions {
  readonly connectionId: string;
  readonly userId: string;
  /** Compact JSON of the original authorization response. */
  readonly authJson: string;
  readonly handlerName: string;
  /** The session's generation after this takeover: a node drops its copy only for a newer one. */
  readonly generation: number;
  /** The user's activity deadline in Redis (epoch ms; 0 when unknown). */
  readonly deadlineAt: number;
  /** The node that held it before ('' when none did: its node drained or died). */
  readonly previousHolder: string;
}

/** A record's identity part, written when the session starts (and after a Redis reconnection). */
export interface SessionStart {
  readonly connectionId: string;
  readonly digest: string;
  readonly userId: string;
  readonly authJson: string;
  readonly authorization: string;
  readonly handlerName: string;
  /** 0 while attached. */
  readonly windowEndAt: number;
}

export type TakeoverResult = { readonly ok: true; readonly record: SessionRecord } | { readonly ok: false; readonly result: 'expired' | 'invalid' };

/**
 * An attached session's record lives this long unrefreshed: longer than a dead
 * node takes to be declared dead (§11, ≤ 15 s), so the reaper always finds the
 * records of a SIGKILLed node's sessions and gives them their window.
 */
export const ATTACHED_TTL_MS = 60_000;
/** The holder refreshes its attached sessions' records this often. */
const REFRESH_MS = 20_000;
/** A detached or orphaned record outlives its window end by this much (the window itself is in the record). */
const AFTER_WINDOW_MS = 60_000;
/** How long the digest of an ended session is remembered (a later resume with it counts as `expired`). */
const ENDED_TTL_MS = 60_000;
const ORPHAN_POLL_MS = 1000;
const ORPHAN_BATCH = 100;
/** Origin of status changes published by these scripts: no node's, so every node delivers them. */
const SCRIPT_ORIGIN = '~|';

const NOW = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

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
const TAKEOVER = `${NOW}
${MOVE_COUNT}
local p = ARGV[6]
local cid = redis.call('GET', KEYS[1])
if not cid then return {'invalid'} end
if cid == '' then return {'expired'} end
local rk = p .. 'rs:' .. cid
local f = redis.call('HGETALL', rk)
local r = {}
for i = 1, #f, 2 do r[f[i]] = f[i + 1] end
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
const ORPHAN = `${NOW}
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

/** Ends an orphaned session `cid` (record key `rk`, fields r = {n, uk, d}) as if its connection closed now (SPEC §12.2, §8). */
const END_ORPHAN = `local function endOrphan(p, cid, rk, r, now, origin)
  local uk = r[2]
  redis.call('DEL', rk)
  redis.call('ZREM', p .. 'ro', cid)
  redis.call('SET', p .. 'rt:' .. r[3], '', 'PX', ${ENDED_TTL_MS})
  if redis.call('HINCRBY', uk, 'c:*', -1) <= 0 then redis.call('HDEL', uk, 'c:*') end
  local total, s, ver = 0, false, 0
  local fields = redis.call('HGETALL', uk)
  for i = 1, #fields, 2 do
    local k, v = fields[i], fields[i + 1]
    if k:sub(1, 2) == 'c:' then total = total + tonumber(v)
    elseif k == 's' then s = v elseif k == 'ver' then ver = tonumber(v) end
  end
  if total <= 0 and s == 'inactive' then
    ver = math.max(now, ver + 1)
    redis.call('DEL', uk)
    redis.call('ZREM', p .. 'deadlines', uk)
    redis.call('PUBLISH', uk, origin .. '["offline",' .. ver .. ']')
  end
end`;

// Orphaned sessions whose window ended: each ends as if its connection closed then.
// ARGV: prefix, batch, origin head.
const END_ORPHANS = `${NOW}
${END_ORPHAN}
local p = ARGV[1]
local out = {}
for _, cid in ipairs(redis.call('ZRANGEBYSCORE', p .. 'ro', '-inf', now, 'LIMIT', 0, tonumber(ARGV[2]))) do
  redis.call('ZREM', p .. 'ro', cid)
  local rk = p .. 'rs:' .. cid
  local r = redis.call('HMGET', rk, 'n', 'uk', 'd')
  if r[1] == '' and r[2] then
    endOrphan(p, cid, rk, r, now, ARGV[3])
    table.insert(out, cid)
  end
end
return out`;

// A /v1 command for a session held by no node (SPEC §12.2: it applies to the detached session).
// ARGV: prefix, cid, op 'set'|'del'|'watch'|'end', field, value, origin head.
// Returns the holder when a node holds it (the command goes there), '' when applied, false without a session.
const EDIT_ORPHAN = `${NOW}
${END_ORPHAN}
local p, cid, op = ARGV[1], ARGV[2], ARGV[3]
local rk = p .. 'rs:' .. cid
local n = redis.call('HGET', rk, 'n')
if not n then return false end
if n ~= '' then return n end
if op == 'set' then redis.call('HSET', rk, ARGV[4], ARGV[5])
elseif op == 'del' then redis.call('HDEL', rk, ARGV[4])
elseif op == 'watch' then
  local list = {}
  local seen = {}
  local cur = redis.call('HGET', rk, 'wu')
  if cur then for _, u in ipairs(cjson.decode(cur)) do if not seen[u] then seen[u] = true; table.insert(list, u) end end end
  for _, u in ipairs(cjson.decode(ARGV[5])) do if not seen[u] then seen[u] = true; table.insert(list, u) end end
  redis.call('HSET', rk, 'wu', #list == 0 and '[]' or cjson.encode(list))
elseif op == 'end' then
  endOrphan(p, cid, rk, redis.call('HMGET', rk, 'n', 'uk', 'd'), now, ARGV[6])
end
return ''`;

// DELETE /v1/user/<user>/connections (SPEC §12.6) for the sessions of `user` held by no node.
// ARGV: prefix, user id, origin head. Orphans are few (they wait for their client after a drain or a death).
const END_USER_ORPHANS = `${NOW}
${END_ORPHAN}
local p = ARGV[1]
local n = 0
for _, cid in ipairs(redis.call('ZRANGE', p .. 'ro', 0, -1)) do
  local rk = p .. 'rs:' .. cid
  local r = redis.call('HMGET', rk, 'n', 'uk', 'd', 'u')
  if r[1] == '' and r[4] == ARGV[2] then
    endOrphan(p, cid, rk, r, now, ARGV[3])
    n = n + 1
  end
end
return n`;

// A session's record written by its holder: when it starts, and again after a Redis reconnection
// (its subscriptions then follow from scratch: the t: and l: fields go first). Nothing when another node
// holds the session (it was taken over meanwhile). KEYS: record, token key, node's sessions.
// ARGV: node, attached TTL, digest, user, auth JSON, identity, handler, window ms, user hash key,
// window end (0: attached), connection id, '1' to clear the subscriptions.
const WRITE_START = `local n = redis.call('HGET', KEYS[1], 'n')
if n and n ~= ARGV[1] then return 0 end
if ARGV[12] == '1' then
  for _, f in ipairs(redis.call('HKEYS', KEYS[1])) do
    local k = f:sub(1, 2)
    if k == 't:' or k == 'l:' then redis.call('HDEL', KEYS[1], f) end
  end
end
redis.call('HSET', KEYS[1], 'd', ARGV[3], 'u', ARGV[4], 'a', ARGV[5], 'i', ARGV[6], 'h', ARGV[7], 'n', ARGV[1], 'w', ARGV[10], 'wm', ARGV[8], 'uk', ARGV[9])
local w = tonumber(ARGV[10])
if w > 0 then
  redis.call('PEXPIREAT', KEYS[1], w + ${AFTER_WINDOW_MS})
  redis.call('SET', KEYS[2], ARGV[11], 'PXAT', w + ${AFTER_WINDOW_MS})
else
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('SET', KEYS[2], ARGV[11], 'PX', ARGV[2])
end
redis.call('SADD', KEYS[3], ARGV[11])
redis.call('PEXPIRE', KEYS[3], tonumber(ARGV[2]) + tonumber(ARGV[8]) + ${AFTER_WINDOW_MS})
return 1`;

// Endpoint 8 (SPEC §7, §12.2) for the sessions of `user` held by no node and subscribed to the users lattice.
// ARGV: prefix, user id, JSON list of users to add.
const WATCH_USER_ORPHANS = `local p = ARGV[1]
local adds = cjson.decode(ARGV[3])
for _, cid in ipairs(redis.call('ZRANGE', p .. 'ro', 0, -1)) do
  local rk = p .. 'rs:' .. cid
  local r = redis.call('HMGET', rk, 'n', 'u', 'wu')
  if r[1] == '' and r[2] == ARGV[2] and r[3] then
    local list, seen = {}, {}
    for _, u in ipairs(cjson.decode(r[3])) do if not seen[u] then seen[u] = true; table.insert(list, u) end end
    for _, u in ipairs(adds) do if not seen[u] then seen[u] = true; table.insert(list, u) end end
    redis.call('HSET', rk, 'wu', #list == 0 and '[]' or cjson.encode(list))
  end
end
return 0`;

/** An edit of an orphaned session's record: its subscriptions, or its end (DELETE /v1/connection). */
export type OrphanEdit =
  | { readonly op: 'set'; readonly field: string; readonly value: string }
  | { readonly op: 'del'; readonly field: string }
  | { readonly op: 'watch'; readonly users: readonly string[] }
  | { readonly op: 'end' };

/** What changed in a session during one tick. */
interface Change {
  readonly start?: SessionStart;
  readonly subscriptions?: SessionSubscriptions;
  readonly windowEndAt?: number;
  /** Written again after a Redis reconnection. */
  readonly isRestart?: boolean;
}

type Script = (keys: readonly string[], args: readonly (string | number | Buffer)[]) => Promise<unknown>;

/** What the records writer keeps of a session between writes: what it wrote, to remove what went. */
interface Written {
  topics: Set<string>;
  namespaces: Set<string>;
}

/** A session this node holds, as the writer sees it. */
export interface HeldSession {
  readonly connectionId: string;
  readonly digest: string;
  readonly isDetached: boolean;
}

/**
 * The Redis side of resumable sessions (SPEC §12.5, docs/cluster.md
 * "Resumable sessions"): records written when a session starts and on every
 * change of its subscriptions, batched per tick in one pipeline; the
 * takeover script; node death and drain; and the end of orphaned sessions'
 * windows. Tokens never reach Redis, only their digests.
 */
export class SessionRecords {
  private readonly logger = new Logger(SessionRecords.name);
  private readonly takeoverScript: Script;
  private readonly orphanScript: Script;
  private readonly endOrphansScript: Script;
  private readonly editOrphanScript: Script;
  private readonly endUserOrphansScript: Script;
  private readonly watchUserOrphansScript: Script;
  private readonly writeStartName = 'gatewaySessionWriteStart';
  private readonly written = new Map<string, Written>();
  /** Writes of this tick: connection id → the record's new state (a start, or subscriptions). */
  private readonly pending = new Map<string, Change>();
  private flushing: Promise<void> | null = null;
  private refreshTimer: NodeJS.Timeout | null = null;
  private orphanTimer: NodeJS.Timeout | null = null;
  private isStopped = false;

  constructor(
    private readonly link: RedisLink,
    private readonly names: ClusterNames,
    private readonly nodeId: string,
    private readonly windowMs: number,
    private readonly held: () => Iterable<HeldSession>,
    private readonly restart: () => Iterable<[SessionStart, SessionSubscriptions]> = () => [],
  ) {
    this.takeoverScript = link.script('gatewaySessionTakeover', 1, TAKEOVER);
    this.orphanScript = link.script('gatewaySessionOrphan', 0, ORPHAN);
    this.endOrphansScript = link.script('gatewaySessionEndOrphans', 0, END_ORPHANS);
    this.editOrphanScript = link.script('gatewaySessionEditOrphan', 0, EDIT_ORPHAN);
    this.endUserOrphansScript = link.script('gatewaySessionEndUserOrphans', 0, END_USER_ORPHANS);
    this.watchUserOrphansScript = link.script('gatewaySessionWatchUserOrphans', 0, WATCH_USER_ORPHANS);
    link.script(this.writeStartName, 3, WRITE_START);
    // After a reconnection Redis may have lost the records (or missed changes made while it was down).
    let isFirstUp = true;
    link.onUp(() => {
      if (isFirstUp) return void (isFirstUp = false);
      this.written.clear();
      for (const [start, subscriptions] of this.restart()) void this.queue(start.connectionId, { start, subscriptions, isRestart: true });
    });
    this.refreshTimer = setInterval(() => void this.refresh(), REFRESH_MS);
    this.refreshTimer.unref();
    this.scheduleOrphanPoll();
  }

  /** This node drained: its sessions are held by no node now (their records take the commands). */
  get hasLetGo(): boolean {
    return this.isStopped;
  }

  /** A session started (its hello is about to go): resolves once its record is in Redis. */
  started(start: SessionStart, subscriptions: SessionSubscriptions): Promise<void> {
    return this.queue(start.connectionId, { start, subscriptions });
  }

  /** Its subscriptions changed: resolves once the record says so. */
  changed(connectionId: string, subscriptions: SessionSubscriptions): Promise<void> {
    return this.queue(connectionId, { subscriptions });
  }

  /** Its socket is gone: the record carries the window end, and expires after it. */
  detached(connectionId: string, windowEndAt: number): Promise<void> {
    return this.queue(connectionId, { windowEndAt });
  }

  /** This node rebuilt the session from its record: what is in Redis is what it wrote. */
  adopted(record: SessionRecord): void {
    this.written.set(record.connectionId, { topics: new Set(record.topics.keys()), namespaces: new Set(record.namespaces) });
  }

  /** The session left this node (ended, or taken over elsewhere): its record is no longer ours to write. */
  forget(connectionId: string): void {
    this.written.delete(connectionId);
    this.pending.delete(connectionId);
  }

  /** SPEC §12.3/12.5: take the session of the token `digest` over, or say why not. */
  async takeOver(digest: string, handlerName: string, newDigest: string): Promise<TakeoverResult> {
    const args = [digest, handlerName, this.nodeId, newDigest, ATTACHED_TTL_MS, this.names.prefix];
    const reply = (await this.takeoverScript([this.names.sessionToken(digest)], args)) as [string, string?, string?, number?, string?, string[]?];
    if (reply[0] !== 'ok') return { ok: false, result: reply[0] === 'expired' ? 'expired' : 'invalid' };
    const [, connectionId, previousHolder, generation, deadline, flat] = reply as [string, string, string, number, string, string[]];
    const fields = new Map<string, string>();
    for (let i = 0; i < flat.length; i += 2) fields.set(flat[i], flat[i + 1]);
    const topics = new Map<string, RecordedPosition>();
    const namespaces: string[] = [];
    for (const [field, value] of fields) {
      if (field.startsWith('t:')) topics.set(field.slice(2), JSON.parse(value) as RecordedPosition);
      else if (field.startsWith('l:')) namespaces.push(field.slice(2));
    }
    const watch = fields.get('wu');
    return {
      ok: true,
      record: {
        connectionId,
        userId: fields.get('u')!,
        authJson: fields.get('a')!,
        handlerName: fields.get('h')!,
        generation: Number(generation),
        deadlineAt: Number(deadline),
        previousHolder,
        topics,
        namespaces,
        watch: watch === undefined ? null : (JSON.parse(watch) as string[]),
      },
    };
  }

  /** The node holding a session, '' when none does (orphaned), null when there is no such session. */
  async holderOf(connectionId: string): Promise<string | null> {
    return this.link.command.hget(this.names.session(connectionId), 'n');
  }

  /**
   * Apply `edit` to the record of a session held by no node. Returns the
   * node holding it when one does (the command belongs there), '' when
   * applied, null when there is no such session.
   */
  async editOrphan(connectionId: string, edit: OrphanEdit): Promise<string | null> {
    const field = edit.op === 'set' || edit.op === 'del' ? edit.field : '';
    const value = edit.op === 'set' ? edit.value : edit.op === 'watch' ? JSON.stringify(edit.users) : '';
    const reply = (await this.editOrphanScript([], [this.names.prefix, connectionId, edit.op, field, value, SCRIPT_ORIGIN])) as string | null;
    return reply;
  }

  /** Endpoint 8 for the sessions of `userId` that no node holds and that watch users. */
  async watchForOrphansOfUser(userId: string, userIds: readonly string[]): Promise<void> {
    await this.watchUserOrphansScript([], [this.names.prefix, userId, JSON.stringify(userIds)]);
  }

  /** SPEC §12.6: end the sessions of `userId` that no node holds (the nodes end the ones they hold). */
  async endOrphansOfUser(userId: string): Promise<void> {
    await this.endUserOrphansScript([], [this.names.prefix, userId, SCRIPT_ORIGIN]);
  }

  /**
   * A node drains (itself) or was declared dead: its sessions are detached
   * and held by no node until resumed or their window ends (SPEC §12.5).
   */
  async orphan(nodeId: string): Promise<void> {
    if (nodeId === this.nodeId) this.isStopped = true;
    const count = (await this.orphanScript([], [nodeId, this.names.prefix, nodeId === this.nodeId ? '0' : '1'])) as number;
    if (count > 0) this.logger.log({ msg: 'sessions detached from their node', node: nodeId, sessions: count });
  }

  stop(): void {
    this.isStopped = true;
    if (this.refreshTimer !== null) clearInterval(this.refreshTimer);
    if (this.orphanTimer !== null) clearTimeout(this.orphanTimer);
    this.refreshTimer = this.orphanTimer = null;
  }

  private queue(connectionId: string, change: Change): Promise<void> {
    if (this.isStopped || !this.link.isUp) return Promise.resolve();
    const known = this.pending.get(connectionId);
    this.pending.set(connectionId, { ...known, ...change });
    // One pipeline per tick for every session that changed in it.
    return (this.flushing ??= new Promise<void>((resolve) => setImmediate(resolve)).then(() => this.flush()));
  }

  private async flush(): Promise<void> {
    this.flushing = null;
    const batch = [...this.pending];
    this.pending.clear();
    if (this.isStopped) return;
    const pipeline = this.link.command.pipeline();
    let writes = 0;
    for (const [connectionId, change] of batch) {
      const key = this.names.session(connectionId);
      const start = change.start;
      if (start !== undefined) {
        const keys = [key, this.names.sessionToken(start.digest), this.names.nodeSessions(this.nodeId)];
        const args = [this.nodeId, ATTACHED_TTL_MS, start.digest, start.userId, start.authJson, start.authorization, start.handlerName, this.windowMs];
        const more = [this.names.channel('u', start.userId), start.windowEndAt, connectionId, change.isRestart === true ? '1' : '0'];
        (pipeline as unknown as Record<string, (...args: unknown[]) => unknown>)[this.writeStartName](...keys, ...args, ...more);
      } else if (!this.written.has(connectionId)) {
        continue; // not ours (any more)
      }
      writes++;
      if (change.subscriptions !== undefined) this.writeSubscriptions(pipeline, connectionId, key, change.subscriptions);
      if (change.windowEndAt !== undefined) {
        pipeline.hset(key, 'w', change.windowEndAt);
        pipeline.pexpireat(key, change.windowEndAt + AFTER_WINDOW_MS);
      }
    }
    if (writes === 0) return;
    try {
      await this.link.timed('session records', pipeline.exec());
    } catch (err) {
      this.logger.warn({ msg: 'session records not written', sessions: batch.length, error: (err as Error).message });
    }
  }

  private writeSubscriptions(pipeline: ReturnType<RedisLink['command']['pipeline']>, connectionId: string, key: string, subscriptions: SessionSubscriptions): void {
    const before = this.written.get(connectionId) ?? { topics: new Set<string>(), namespaces: new Set<string>() };
    const fields: Record<string, string> = {};
    const gone: string[] = [];
    for (const [topic, position] of subscriptions.topics) if (!before.topics.has(topic)) fields['t:' + topic] = JSON.stringify(position);
    for (const topic of before.topics) if (!subscriptions.topics.has(topic)) gone.push('t:' + topic);
    const namespaces = new Set(subscriptions.namespaces);
    for (const namespace of namespaces) if (!before.namespaces.has(namespace)) fields['l:' + namespace] = '1';
    for (const namespace of before.namespaces) if (!namespaces.has(namespace)) gone.push('l:' + namespace);
    if (subscriptions.watch !== null) fields.wu = JSON.stringify(subscriptions.watch);
    else gone.push('wu');
    if (Object.keys(fields).length > 0) pipeline.hset(key, fields);
    if (gone.length > 0) pipeline.hdel(key, ...gone);
    this.written.set(connectionId, { topics: new Set(subscriptions.topics.keys()), namespaces });
  }

  /** Keep this node's attached sessions' records (and tokens) alive; detached ones expire after their window. */
  private async refresh(): Promise<void> {
    if (this.isStopped || !this.link.isUp) return;
    const pipeline = this.link.command.pipeline();
    let count = 0;
    for (const session of this.held()) {
      count++;
      if (session.isDetached) continue;
      pipeline.pexpire(this.names.session(session.connectionId), ATTACHED_TTL_MS);
      pipeline.pexpire(this.names.sessionToken(session.digest), ATTACHED_TTL_MS);
    }
    if (count === 0) return;
    // The node's set goes by itself too if every node stops for good (a reaper deletes it otherwise).
    pipeline.pexpire(this.names.nodeSessions(this.nodeId), ATTACHED_TTL_MS + this.windowMs + AFTER_WINDOW_MS);
    await pipeline.exec().catch(() => undefined);
  }

  private scheduleOrphanPoll(): void {
    if (this.isStopped) return;
    this.orphanTimer = setTimeout(() => void this.endOrphans().finally(() => this.scheduleOrphanPoll()), ORPHAN_POLL_MS / 2 + Math.random() * ORPHAN_POLL_MS);
    this.orphanTimer.unref();
  }

  private async endOrphans(): Promise<void> {
    if (!this.link.isUp) return;
    try {
      const ended = (await this.endOrphansScript([], [this.names.prefix, ORPHAN_BATCH, SCRIPT_ORIGIN])) as string[];
      if (ended.length > 0) this.logger.log({ msg: 'orphaned sessions ended: window over', sessions: ended.length });
    } catch (err) {
      this.logger.debug({ msg: 'orphaned sessions check failed', error: (err as Error).message });
    }
  }
}
