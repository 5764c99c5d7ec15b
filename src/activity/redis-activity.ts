import { Logger } from '@nestjs/common';
import { SessionStore } from '../resume/session-store';
import { ClusterNames, EVERY_PARTITION, originHead, partitionOf } from '../cluster/channels';
import { ALIVE_TTL_MS } from '../cluster/node-liveness';
import { PartitionMembers, PartitionWalk } from '../cluster/partition-walk';
import { RedisLink } from '../cluster/redis-link';
import { RedisShards } from '../cluster/redis-shards';
import { Connection } from '../connections/connection';
import { Identity } from '../protocol/identity';
import { extendDeadline } from './activity';
import { REDIS_NOW } from '../cluster/redis-now';
import { STATUS_VERSIONS } from './status-version';
import { ActivityEvents, UserActivity } from './user-activity';
import { WRITE_USER_AUTH } from './user-auth-script';

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
/** How often a node looks for reaps left unfinished (a partition unreachable then; SPEC §13.4). */
const REAP_RETRY_MS = 10_000;

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

// KEYS: user hash (= user channel), the node's users of its partition, the partition's deadlines and status floor.
// ARGV: node, user id, deadline, authorization, handler, origin head, 'incr'|'set', count, wanted status:
// 'active'; 'inactive' (its deadline passed long ago); 'due' (it passed while Redis could not claim it:
// when Redis lost the user, it is active with that deadline, so the next claim sends its one notice).
const ASSERT = `${NOW}
local userKey, nodeUsers, deadlines, floor = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local node, user, deadline, auth, handler, origin, mode, count, wanted = unpack(ARGV)
local field = 'c:' .. node
if mode == 'incr' then redis.call('HINCRBY', userKey, field, count) else redis.call('HSET', userKey, field, count) end
local s = redis.call('HGET', userKey, 's')
redis.call('HSET', userKey, 'id', user, 'auth', auth, 'h', handler)
redis.call('SADD', nodeUsers, user)
local ver = tonumber(redis.call('HGET', userKey, 'ver')) or 0
local want = false
if wanted == 'active' then
  redis.call('ZADD', deadlines, 'GT', deadline, userKey)
  if s ~= 'active' then want = 'active' end
elseif not s and wanted == 'due' then
  redis.call('ZADD', deadlines, 'GT', deadline, userKey)
  want = 'active'
elseif not s then want = 'inactive' end
if want then
  ver = nextVersion(now, ver, floor)
  s = want
  redis.call('HSET', userKey, 's', s, 'ver', ver)
  redis.call('PUBLISH', userKey, origin .. '["' .. s .. '",' .. ver .. ']')
end
return {s, ver}`;

// KEYS: user hash, the node's users of its partition, the partition's deadlines and status floor.
// ARGV: node, user id, 'one'|'all', force offline '1'|'0', origin head. A resumable session's record
// step (resume/session-records.ts) runs first and says whether its connection leaves here.
const LEAVE = `${NOW}
local userKey, nodeUsers, deadlines, floor = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local node, user, mode, forced, origin = unpack(ARGV)
local field = 'c:' .. node
local n = 0
if mode == 'one' then n = redis.call('HINCRBY', userKey, field, -1) end
if n <= 0 then
  redis.call('HDEL', userKey, field)
  redis.call('SREM', nodeUsers, user)
end
${readUser('userKey')}
if total <= 0 and s and (s == 'inactive' or forced == '1') then
  ver = offlineVersion(now, ver, floor)
  redis.call('DEL', userKey)
  redis.call('ZREM', deadlines, userKey)
  redis.call('PUBLISH', userKey, origin .. '["offline",' .. ver .. ']')
  return {'offline', ver}
end
return {s, ver}`;

// One due user of a partition (PartitionWalk.due found it): only the node whose claim pops the deadline
// notifies (SPEC §11). KEYS: the partition's deadlines and status floor, the user hash. ARGV: origin head.
const CLAIM = `${NOW}
local deadlines, floor, userKey = KEYS[1], KEYS[2], KEYS[3]
local origin = ARGV[1]
local due = redis.call('ZSCORE', deadlines, userKey)
if not due or tonumber(due) > now then return false end
redis.call('ZREM', deadlines, userKey)
${readUser('userKey')}
if s ~= 'active' or not id then return false end
local status = 'inactive'
if total > 0 then
  ver = nextVersion(now, ver, floor)
  redis.call('HSET', userKey, 's', status, 'ver', ver)
else
  status = 'offline'
  ver = offlineVersion(now, ver, floor)
  redis.call('DEL', userKey)
end
redis.call('PUBLISH', userKey, origin .. '["' .. status .. '",' .. ver .. ']')
return {id, auth, h, status, ver}`;

type Script = (keys: readonly string[], args: readonly (string | number | Buffer)[]) => Promise<unknown>;
type StatusReply = [status: 'active' | 'inactive' | 'offline' | null, version: number];
type ClaimReply = [
  userId: string,
  authorization: string,
  handlerName: string,
  status: 'inactive' | 'offline',
  version: number,
];

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
  private readonly authScript: Script;
  private readonly head: Buffer;
  private flushTimer: NodeJS.Timeout | null = null;
  private claimTimer: NodeJS.Timeout | null = null;
  private readonly reapTimer: NodeJS.Timeout;
  private isStopped = false;
  private readonly walk: PartitionWalk;

  constructor(
    /** A user's keys live on its partition's link; node liveness on the control link (SPEC §13.4). */
    private readonly shards: RedisShards,
    private readonly names: ClusterNames,
    private readonly nodeId: string,
    private readonly countOf: (userId: string) => number,
    private readonly events: ActivityEvents,
    /** The resumable sessions' records (SPEC §12.5): their step runs before a connection or a node's presence goes. */
    private readonly sessions: SessionStore,
  ) {
    super();
    this.assertScript = shards.script('gatewaySessionAssert', 4, ASSERT);
    this.leaveScript = shards.script('gatewaySessionLeave', 4, LEAVE);
    this.claimScript = shards.script('gatewaySessionClaim', 3, CLAIM);
    this.authScript = shards.script('gatewaySessionAuth', 1, WRITE_USER_AUTH);
    this.walk = new PartitionWalk(shards);
    this.head = originHead(nodeId);
    for (const link of shards.data) link.onUp(() => this.reassert(link).then(() => this.finishReaps()));
    this.reapTimer = setInterval(() => void this.finishReaps(), REAP_RETRY_MS);
    this.reapTimer.unref();
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
    if (!this.shards.ofName(userId).isUp || this.isStopped) return; // re-asserted after the reconnect; nothing while draining
    await this.run(() => this.assert(userId, 'incr', 1, 'active'));
  }

  /**
   * A connection of `userId` here closed. `sessionId`: the connection id of
   * a resumable session (SPEC §12.5), whose record step runs first: its
   * connection leaves only if this node still held it.
   */
  async disconnected(userId: string, sessionId: string | null = null): Promise<void> {
    this.forgetIfGone(userId);
    if (!this.shards.ofName(userId).isUp || this.isStopped) return;
    await this.run(async () => {
      if (sessionId !== null && !(await this.sessions.ended(sessionId, userId))) return;
      await this.leave(userId, this.nodeId, 'one', false);
    });
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

  /**
   * SPEC §14: a refresh here changed the user's identity. Kept for the next
   * assert (which rewrites the hash's identity from it) and written to the
   * user's hash at once, so the notice carries it whichever node claims the
   * deadline. With connections of the user on several nodes, the hash holds
   * the identity last written by any of them.
   */
  refreshed(identity: Identity): void {
    const session = this.local.get(identity.userId);
    if (session === undefined) return;
    session.authorization = identity.authorization;
    if (!this.shards.ofName(identity.userId).isUp || this.isStopped) return; // re-asserted after the reconnect
    const key = this.names.user(identity.userId);
    void this.run(async () => void (await this.authScript([key], [session.authorization])));
  }

  /** A session of `userId` here was taken over by another node, which counts it now: nothing changes in Redis. */
  private handedOver(userId: string): void {
    this.forgetIfGone(userId);
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
    if (now - session.pushedAt >= DEADLINE_FLUSH_MS && this.shards.ofName(userId).isUp) {
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
   * it re-asserts its presence when it finds its key was lost. Each partition
   * is reaped on its own (SPEC §13.4): one that Redis does not answer for (its
   * shard down) holds back no other, and the node stays listed as unreaped
   * until a later pass ({@link finishReaps}) gets through.
   */
  async removeNode(nodeId: string): Promise<void> {
    const control = this.shards.control.command;
    // A dead node that is alive again (it was paused) keeps its presence: checked once, before the walk. So does a
    // node still draining, for a later pass; one listed as unreaped stays listed until a reap of it gets through.
    if (nodeId !== this.nodeId && (await control.exists(this.names.alive(nodeId))) === 1) return;
    // Listed until every partition is done: a reaper (or a draining node) that dies on the way leaves it to the others.
    await control.sadd(this.names.unreaped, nodeId);
    const detached = await Promise.all(EVERY_PARTITION.map((partition) => this.reapPartition(nodeId, partition)));
    const sessions = detached.reduce<number>((sum, count) => sum + (count ?? 0), 0);
    if (sessions > 0) this.logger.log({ msg: 'sessions detached from their node', node: nodeId, sessions });
    const missed = detached.filter((count) => count === null).length;
    if (missed === 0) return void (await control.srem(this.names.unreaped, nodeId));
    this.logger.warn({
      msg: 'node reaped in part: the rest once Redis answers there',
      node: nodeId,
      partitions: missed,
    });
  }

  /**
   * Partition `partition` of a dead or drained node: its resumable sessions
   * there are held by no node first (SPEC §12.5: their windows start), then
   * its users there leave. Resolves to how many sessions it detached; null
   * when Redis did not answer.
   */
  private async reapPartition(nodeId: string, partition: number): Promise<number | null> {
    const link = this.shards.of(partition);
    if (!link.isUp) return null;
    try {
      const detached = await this.sessions.orphan(nodeId, [partition]);
      const key = this.names.nodeUsers(partition, nodeId);
      const users = await link.timed('smembers', link.command.smembers(key));
      await Promise.all(users.map((userId) => this.leave(userId, nodeId, 'all', true)));
      if (nodeId === this.nodeId) await link.command.del(key);
      return detached;
    } catch (err) {
      this.logger.debug({ msg: 'reaping a partition failed', node: nodeId, partition, error: (err as Error).message });
      return null;
    }
  }

  /**
   * Reaps left unfinished because a partition could not be reached: tried
   * again when a link comes back and every {@link REAP_RETRY_MS}, each by
   * the node that takes that node's reaper lease.
   */
  private async finishReaps(): Promise<void> {
    const control = this.shards.control;
    if (this.isStopped || !control.isUp) return;
    try {
      // This node's own id may be listed by an earlier process with its NODE_ID: this one re-asserted its own state.
      const pending = (await control.command.smembers(this.names.unreaped)).filter((nodeId) => nodeId !== this.nodeId);
      for (const nodeId of pending) {
        const lease = await control.command.set(this.names.reaper(nodeId), this.nodeId, 'PX', ALIVE_TTL_MS, 'NX');
        if (lease !== null) await this.removeNode(nodeId);
      }
    } catch (err) {
      this.logger.debug({ msg: 'finishing a reap failed', error: (err as Error).message });
    }
  }

  /** The users Redis lists with connections on `nodeId`, by partition, every partition (or `partitions`) read at once. */
  private usersOf(nodeId: string, partitions?: readonly number[]): Promise<PartitionMembers[]> {
    return this.walk.members((partition) => this.names.nodeUsers(partition, nodeId), partitions);
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
    clearInterval(this.reapTimer);
    if (this.shards.control.isUp) await this.run(() => this.removeNode(this.nodeId));
  }

  /**
   * After (re)connecting, or when this node found its liveness key lost: this
   * node's counts, deadlines and statuses as it knows them; stale ones
   * removed. A deadline that passed since the link went down could not be
   * claimed: if Redis lost the user, it goes back as due, so the next claim
   * sends its one `session_inactive` (SPEC §8) and makes the user inactive.
   */
  private async reassert(link: RedisLink): Promise<void> {
    const listed = (await this.usersOf(this.nodeId, this.shards.partitionsOf(link))).flatMap((part) => part.members);
    const stale = listed.filter((userId) => !this.local.has(userId));
    await Promise.all(stale.map((userId) => this.run(() => this.leave(userId, this.nodeId, 'all', false))));
    const now = Date.now();
    // Deadlines that passed before this were claimed while Redis was reachable (claims run every ≤ 500 ms).
    const unclaimedFrom = (link.downSince ?? now) - CLAIM_MIN_MS - CLAIM_JITTER_MS;
    const wantedOf = (deadlineAt: number): 'active' | 'due' | 'inactive' =>
      deadlineAt > now ? 'active' : deadlineAt >= unclaimedFrom ? 'due' : 'inactive';
    await Promise.all(
      [...this.local]
        .filter(([userId]) => this.shards.ofName(userId) === link)
        .map(([userId, session]) =>
          this.run(() => this.assert(userId, 'set', this.countOf(userId), wantedOf(session.deadlineAt))),
        ),
    );
  }

  private async flush(): Promise<void> {
    this.flushTimer = null;
    // Users whose link is down are re-asserted after its reconnect.
    const users = [...this.dirty].filter((userId) => this.shards.ofName(userId).isUp);
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
    const key = this.names.user(userId);
    const partition = partitionOf(userId);
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
      [
        key,
        this.names.nodeUsers(partition, this.nodeId),
        this.names.deadlines(partition),
        this.names.statusFloor(partition),
      ],
      args,
    )) as StatusReply;
    if (status !== null) this.events.announce(userId, status, version);
  }

  private async leave(userId: string, nodeId: string, mode: 'one' | 'all', isForced: boolean): Promise<void> {
    const partition = partitionOf(userId);
    const keys = [
      this.names.user(userId),
      this.names.nodeUsers(partition, nodeId),
      this.names.deadlines(partition),
      this.names.statusFloor(partition),
    ];
    const args = [nodeId, userId, mode, isForced ? '1' : '0', this.head];
    const reply = (await this.leaveScript(keys, args)) as StatusReply;
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

  /** Pops the due deadlines of every partition: each user's claim is its own script, in its partition. */
  private async claim(): Promise<void> {
    const partitions = this.shards.data.filter((link) => link.isUp).flatMap((link) => this.shards.partitionsOf(link));
    if (partitions.length === 0) return;
    try {
      const due = await this.walk.due((partition) => this.names.deadlines(partition), CLAIM_BATCH, partitions);
      const claims = due.flatMap(({ partition, members }) =>
        members.map((userKey) =>
          this.claimScript([this.names.deadlines(partition), this.names.statusFloor(partition), userKey], [this.head]),
        ),
      );
      for (const claimed of await Promise.all(claims)) {
        if (claimed === null) continue;
        const [userId, authorization, handlerName, status, version] = claimed as ClaimReply;
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
