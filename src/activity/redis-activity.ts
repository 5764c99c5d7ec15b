import { Logger } from '@nestjs/common';
import { ClusterNames, originHead } from '../cluster/channels';
import { RedisLink } from '../cluster/redis-link';
import { Connection } from '../connections/connection';
import { Identity } from '../protocol/identity';
import { extendDeadline } from './activity';
import { STATUS_VERSIONS, REDIS_NOW } from './status-version';
import { ActivityEvents, UserActivity } from './user-activity';

/** What this node knows of a user with connections here. */
interface LocalSession {
  deadlineAt: number;
  /** When a call's `active` last reached Redis (epoch ms; 0 = never). */
  pushedAt: number;
  authorization: string;
  handlerName: string;
}

/** CLUSTER.md: deadlines are pushed at most about once per second per user. */
export const DEADLINE_FLUSH_MS = 1000;
/** CLUSTER.md: every node polls for due deadlines every 250–1000 ms, with jitter. */
const CLAIM_MIN_MS = 250;
const CLAIM_JITTER_MS = 250;
const CLAIM_BATCH = 100;

// Time from Redis, so node clock skew cannot make a status go backwards (SPEC §7); versions from one clock.
const NOW = `${REDIS_NOW}
${STATUS_VERSIONS}`;
/** Reads the user hash `key` into: total connections, s, ver, id, auth, h. */
const readUser = (key: string): string => `local total, s, ver, id, auth, h = 0, false, 0, false, '', ''
local fields = redis.call('HGETALL', ${key})
for i = 1, #fields, 2 do
  local f, v = fields[i], fields[i + 1]
  if f:sub(1, 2) == 'c:' then total = total + tonumber(v)
  elseif f == 's' then s = v elseif f == 'ver' then ver = tonumber(v)
  elseif f == 'id' then id = v elseif f == 'auth' then auth = v elseif f == 'h' then h = v end
end`;

// KEYS: user hash (= user channel), node's users, deadlines, status floor.
// ARGV: node, user id, deadline, authorization, handler, origin head, 'incr'|'set', count, wanted status:
// 'active'; 'inactive' (its deadline passed long ago); 'due' (it passed while Redis could not claim it:
// when Redis lost the user, it is active with that deadline, so the next claim sends its one notice).
const ASSERT = `${NOW}
local field = 'c:' .. ARGV[1]
if ARGV[7] == 'incr' then redis.call('HINCRBY', KEYS[1], field, ARGV[8]) else redis.call('HSET', KEYS[1], field, ARGV[8]) end
local s = redis.call('HGET', KEYS[1], 's')
redis.call('HSET', KEYS[1], 'id', ARGV[2], 'auth', ARGV[4], 'h', ARGV[5])
redis.call('SADD', KEYS[2], ARGV[2])
local ver = tonumber(redis.call('HGET', KEYS[1], 'ver')) or 0
local want = false
if ARGV[9] == 'active' then
  redis.call('ZADD', KEYS[3], 'GT', ARGV[3], KEYS[1])
  if s ~= 'active' then want = 'active' end
elseif not s and ARGV[9] == 'due' then
  redis.call('ZADD', KEYS[3], 'GT', ARGV[3], KEYS[1])
  want = 'active'
elseif not s then want = 'inactive' end
if want then
  ver = nextVersion(now, ver, KEYS[4])
  s = want
  redis.call('HSET', KEYS[1], 's', s, 'ver', ver)
  redis.call('PUBLISH', KEYS[1], ARGV[6] .. '["' .. s .. '",' .. ver .. ']')
end
return {s, ver}`;

// KEYS: user hash, node's users, deadlines, the node's liveness key, status floor, the user's resumable sessions.
// ARGV: node, user id, 'one'|'all', force offline '1'|'0', origin head, reaping '1'|'0' (nothing if the node is alive again),
// and for a resumable session (SPEC §12.5) ending here: its connection id and REDIS_PREFIX, else ''. Such a session
// leaves only while this node holds it (another took it over, with its count, or it was orphaned by a reaper);
// its record goes and its token is remembered as ended. A revoked one (SPEC §12.6: its record is its end mark,
// field x = the node that held it then) leaves only from that node, which so confirms the end.
const LEAVE = `${NOW}
if ARGV[6] == '1' and redis.call('EXISTS', KEYS[4]) == 1 then return {false, 0} end
if ARGV[7] ~= '' then
  local rk = ARGV[8] .. 'rs:' .. ARGV[7]
  local r = redis.call('HMGET', rk, 'n', 'd', 'x')
  if r[1] and r[1] ~= ARGV[1] then return {false, 0} end
  if r[3] and r[3] ~= ARGV[1] then
    redis.call('SREM', ARGV[8] .. 'rn:' .. ARGV[1], ARGV[7])
    return {false, 0}
  end
  if r[1] then
    redis.call('DEL', rk)
    redis.call('SET', ARGV[8] .. 'rt:' .. r[2], '', 'PX', 60000)
  elseif r[3] then
    redis.call('HSET', rk, 'x', '')
  end
  redis.call('SREM', KEYS[6], ARGV[7])
  redis.call('SREM', ARGV[8] .. 'rn:' .. ARGV[1], ARGV[7])
end
local field = 'c:' .. ARGV[1]
local n = 0
if ARGV[3] == 'one' then n = redis.call('HINCRBY', KEYS[1], field, -1) end
if n <= 0 then
  redis.call('HDEL', KEYS[1], field)
  redis.call('SREM', KEYS[2], ARGV[2])
end
${readUser('KEYS[1]')}
if total <= 0 and s and (s == 'inactive' or ARGV[4] == '1') then
  ver = offlineVersion(now, ver, KEYS[5])
  redis.call('DEL', KEYS[1])
  redis.call('ZREM', KEYS[3], KEYS[1])
  redis.call('PUBLISH', KEYS[1], ARGV[5] .. '["offline",' .. ver .. ']')
  return {'offline', ver}
end
return {s, ver}`;

// KEYS: deadlines, status floor. ARGV: batch size, origin head. Pops due users; only the popping node notifies (SPEC §11).
const CLAIM = `${NOW}
local out = {}
for _, key in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))) do
  redis.call('ZREM', KEYS[1], key)
  ${readUser('key')}
  if s == 'active' and id then
    local status = 'inactive'
    if total > 0 then
      ver = nextVersion(now, ver, KEYS[2])
      redis.call('HSET', key, 's', status, 'ver', ver)
    else
      status = 'offline'
      ver = offlineVersion(now, ver, KEYS[2])
      redis.call('DEL', key)
    end
    redis.call('PUBLISH', key, ARGV[2] .. '["' .. status .. '",' .. ver .. ']')
    table.insert(out, {id, auth, h, status, ver})
  end
end
return out`;

type Script = (keys: readonly string[], args: readonly (string | number | Buffer)[]) => Promise<unknown>;
type StatusReply = [status: 'active' | 'inactive' | 'offline' | null, version: number];

/**
 * Sessions and presence across the cluster (SPEC §8, §11; CLUSTER.md
 * "Presence and sessions"). Redis holds, per user, the status, its version,
 * the identity for the inactivity notice and each node's connection count;
 * one sorted set holds every deadline. Status changes are made and published
 * by the scripts; this node announces what its own scripts returned, and
 * only the node whose claim popped a deadline sends its `session_inactive`.
 * A call's `active` costs no round trip: deadlines are flushed once a second.
 */
export class RedisActivity extends UserActivity {
  private readonly logger = new Logger(RedisActivity.name);
  private readonly local = new Map<string, LocalSession>();
  private readonly dirty = new Set<string>();
  private readonly assertScript: Script;
  private readonly leaveScript: Script;
  private readonly claimScript: Script;
  private readonly head: Buffer;
  private flushTimer: NodeJS.Timeout | null = null;
  private claimTimer: NodeJS.Timeout | null = null;
  private isStopped = false;
  private readonly removeNodeHooks: Array<(nodeId: string) => Promise<void>> = [];

  constructor(
    private readonly link: RedisLink,
    private readonly names: ClusterNames,
    private readonly nodeId: string,
    private readonly countOf: (userId: string) => number,
    private readonly events: ActivityEvents,
  ) {
    super();
    this.assertScript = link.script('gatewaySessionAssert', 4, ASSERT);
    this.leaveScript = link.script('gatewaySessionLeave', 6, LEAVE);
    this.claimScript = link.script('gatewaySessionClaim', 2, CLAIM);
    this.head = originHead(nodeId);
    link.onUp(() => this.reassert());
    this.scheduleClaim();
  }

  /** A connection was authorized here: count it, extend the deadline, status active. */
  authorized(identity: Identity, handlerName: string, windowMs: number): Promise<void> {
    return this.connected(identity.userId, windowMs, identity.authorization, handlerName);
  }

  /** Statuses live in Redis (read there, cluster-wide). */
  statusOf(): null {
    return null;
  }

  /** A connection here closed, or was taken over by another node, which counts it now (SPEC §12.5). */
  connectionGone(connection: Connection): void {
    const userId = connection.userId;
    if (userId === null) return;
    if (connection.isHandedOver) return this.handedOver(userId);
    void this.disconnected(userId, connection.isResumable ? connection.id : null);
  }

  /** A connection of `userId` was authorized here: count it, extend the deadline, status active. */
  async connected(userId: string, windowMs: number, authorization: string, handlerName: string): Promise<void> {
    const session = this.local.get(userId);
    const deadlineAt = extendDeadline(session?.deadlineAt ?? 0, Date.now(), windowMs);
    this.local.set(userId, { deadlineAt, pushedAt: session?.pushedAt ?? 0, authorization, handlerName });
    if (!this.link.isUp || this.isStopped) return; // re-asserted after the reconnect; nothing while draining
    await this.run(() => this.assert(userId, 'incr', 1, 'active'));
  }

  /**
   * A connection of `userId` here closed. `sessionId`: the connection id of
   * a resumable session (SPEC §12.5), whose record goes with it, and which
   * leaves only if this node still holds it.
   */
  async disconnected(userId: string, sessionId: string | null = null): Promise<void> {
    this.forgetIfGone(userId);
    if (!this.link.isUp || this.isStopped) return;
    await this.run(() => this.leave(userId, this.nodeId, 'one', false, sessionId));
  }

  /**
   * SPEC §12.5: this node took a session of `userId` over; the takeover script
   * already moved its count here. Deadline: the user's in Redis (resuming is
   * not activity, §12.2).
   */
  adopted(identity: Identity, handlerName: string, deadlineAt: number): void {
    const { userId, authorization } = identity;
    const session = this.local.get(userId);
    if (session !== undefined) session.deadlineAt = Math.max(session.deadlineAt, deadlineAt);
    else this.local.set(userId, { deadlineAt, pushedAt: 0, authorization, handlerName });
  }

  /** A session of `userId` here was taken over by another node, which counts it now: nothing changes in Redis. */
  private handedOver(userId: string): void {
    this.forgetIfGone(userId);
  }

  /** Runs before a node's presence is removed (drain, death): resumable sessions are detached first (SPEC §12.5). */
  beforeRemoveNode(hook: (nodeId: string) => Promise<void>): void {
    this.removeNodeHooks.push(hook);
  }

  private forgetIfGone(userId: string): void {
    if (this.countOf(userId) !== 0) return;
    this.local.delete(userId);
    this.dirty.delete(userId);
  }

  /**
   * SPEC §8 `active`: extend locally now; push to Redis at once when this
   * user's last push is over {@link DEADLINE_FLUSH_MS} old, else with the
   * next flush (at most one push per user per interval, never on the call path).
   */
  touch(userId: string, windowMs: number): void {
    const session = this.local.get(userId);
    if (session === undefined) return;
    const now = Date.now();
    session.deadlineAt = extendDeadline(session.deadlineAt, now, windowMs);
    if (this.isStopped) return;
    if (now - session.pushedAt >= DEADLINE_FLUSH_MS && this.link.isUp) {
      session.pushedAt = now;
      void this.run(() => this.assert(userId, 'incr', 0, 'active'));
      return;
    }
    this.dirty.add(userId);
    if (this.flushTimer === null) {
      this.flushTimer = setTimeout(() => void this.flush(), DEADLINE_FLUSH_MS);
      this.flushTimer.unref();
    }
  }

  /**
   * Drain, or a dead node: its users' counts go; users left without
   * connections go offline at once. A dead node that comes back meanwhile
   * (it was paused, not dead: its liveness key is set again) keeps the rest:
   * it re-asserts its presence when it finds its key was lost.
   */
  async removeNode(nodeId: string): Promise<void> {
    for (const hook of this.removeNodeHooks) await this.run(() => hook(nodeId));
    const users = await this.link.command.smembers(this.names.nodeUsers(nodeId));
    await Promise.all(users.map((userId) => this.run(() => this.leave(userId, nodeId, 'all', true))));
    if (nodeId === this.nodeId) await this.link.command.del(this.names.nodeUsers(nodeId));
  }

  /**
   * Drain (SPEC §11): withdraw this node's presence at once (users left
   * without connections go offline), stop the timers, and count no more
   * connections or departures here.
   */
  async stop(): Promise<void> {
    if (this.isStopped) return;
    this.isStopped = true;
    if (this.flushTimer !== null) clearTimeout(this.flushTimer);
    if (this.claimTimer !== null) clearTimeout(this.claimTimer);
    if (this.link.isUp) await this.run(() => this.removeNode(this.nodeId));
  }

  /**
   * After (re)connecting, or when this node found its liveness key lost: this
   * node's counts, deadlines and statuses as it knows them; stale ones
   * removed. A deadline that passed since the link went down could not be
   * claimed: if Redis lost the user, it goes back as due, so the next claim
   * sends its one `session_inactive` (SPEC §8) and makes the user inactive.
   */
  private async reassert(): Promise<void> {
    const listed = await this.link.command.smembers(this.names.nodeUsers(this.nodeId));
    const stale = listed.filter((userId) => !this.local.has(userId));
    await Promise.all(stale.map((userId) => this.run(() => this.leave(userId, this.nodeId, 'all', false))));
    const now = Date.now();
    // Deadlines that passed before this were claimed while Redis was reachable (claims run every ≤ 500 ms).
    const unclaimedFrom = (this.link.downSince ?? now) - CLAIM_MIN_MS - CLAIM_JITTER_MS;
    const wantedOf = (deadlineAt: number): 'active' | 'due' | 'inactive' =>
      deadlineAt > now ? 'active' : deadlineAt >= unclaimedFrom ? 'due' : 'inactive';
    await Promise.all(
      [...this.local].map(([userId, session]) =>
        this.run(() => this.assert(userId, 'set', this.countOf(userId), wantedOf(session.deadlineAt))),
      ),
    );
  }

  private async flush(): Promise<void> {
    this.flushTimer = null;
    if (!this.link.isUp) return; // re-asserted after the reconnect
    const users = [...this.dirty];
    this.dirty.clear();
    const now = Date.now();
    for (const userId of users) {
      const session = this.local.get(userId);
      if (session !== undefined) session.pushedAt = now;
    }
    await Promise.all(users.map((userId) => this.run(() => this.assert(userId, 'incr', 0, 'active'))));
  }

  private async assert(
    userId: string,
    mode: 'incr' | 'set',
    count: number,
    wanted: 'active' | 'due' | 'inactive',
  ): Promise<void> {
    const session = this.local.get(userId);
    if (session === undefined) return;
    const key = this.names.channel('u', userId);
    const args = [
      this.nodeId,
      userId,
      session.deadlineAt,
      session.authorization,
      session.handlerName,
      this.head,
      mode,
      count,
      wanted,
    ];
    const [status, version] = (await this.assertScript(
      [key, this.names.nodeUsers(this.nodeId), this.names.deadlines, this.names.statusFloor],
      args,
    )) as StatusReply;
    if (status !== null) this.events.announce(userId, status, version);
  }

  private async leave(
    userId: string,
    nodeId: string,
    mode: 'one' | 'all',
    isForced: boolean,
    sessionId: string | null = null,
  ): Promise<void> {
    const key = this.names.channel('u', userId);
    const keys = [
      key,
      this.names.nodeUsers(nodeId),
      this.names.deadlines,
      this.names.alive(nodeId),
      this.names.statusFloor,
      this.names.userSessions(userId),
    ];
    const isReaping = nodeId === this.nodeId ? '0' : '1';
    const session = sessionId === null ? ['', ''] : [sessionId, this.names.prefix];
    const reply = (await this.leaveScript(keys, [
      nodeId,
      userId,
      mode,
      isForced ? '1' : '0',
      this.head,
      isReaping,
      ...session,
    ])) as StatusReply;
    if (reply[0] === 'offline') this.events.announce(userId, 'offline', reply[1]);
  }

  private scheduleClaim(): void {
    if (this.isStopped) return;
    this.claimTimer = setTimeout(
      () => void this.claim().finally(() => this.scheduleClaim()),
      CLAIM_MIN_MS + Math.random() * CLAIM_JITTER_MS,
    );
    this.claimTimer.unref();
  }

  private async claim(): Promise<void> {
    if (!this.link.isUp) return;
    try {
      const claimed = (await this.claimScript(
        [this.names.deadlines, this.names.statusFloor],
        [CLAIM_BATCH, this.head],
      )) as [string, string, string, 'inactive' | 'offline', number][];
      for (const [userId, authorization, handlerName, status, version] of claimed) {
        this.events.inactive(userId, authorization, handlerName);
        this.events.announce(userId, status, version);
      }
    } catch (err) {
      this.logger.debug({ msg: 'deadline claim failed', error: (err as Error).message });
    }
  }

  /** Redis errors (an outage in between) are logged; the next reconnect re-asserts everything. */
  private async run(step: () => Promise<void>): Promise<void> {
    try {
      await step();
    } catch (err) {
      this.logger.debug({ msg: 'presence update failed', error: (err as Error).message });
    }
  }
}
