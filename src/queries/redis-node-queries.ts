import { Logger } from '@nestjs/common';
import type { RedisLink } from '../cluster/redis-link';
import type { RedisShards } from '../cluster/redis-shards';
import type { ClusterNames } from '../cluster/channels';
import type { PresenceStatus } from '../activity/activity.service';
import { readStatuses } from '../users-lattice/cluster-statuses';
import { ClusterAnswers, NodeQueries, QUERY_BUDGET_MS } from './node-queries';

/** A query on the wire: request id, asking node, kind, arguments. */
interface QueryRequest {
  readonly i: number;
  readonly f: string;
  readonly k: string;
  readonly a: unknown;
}

/** An answer on the wire: request id, answering node, value. */
interface QueryReply {
  readonly i: number;
  readonly n: string;
  readonly v: unknown;
}

interface PendingQuery {
  readonly answers: Map<string, unknown>;
  /** The live nodes to hear from; null until Redis listed them. */
  expected: Set<string> | null;
  readonly done: () => void;
}

/**
 * Cluster-wide queries on Redis pub/sub (SPEC §15.2): a request on the
 * channel every node listens to, answers on the asking node's own query
 * channel. The live nodes are those listed with a liveness key (as the
 * reaper reads them, NodeLiveness); the answer is complete when each has
 * answered, or when the budget runs out: the silent ones are "unreachable".
 * While Redis is down, the other nodes last seen alive are unreachable.
 */
export class RedisNodeQueries extends NodeQueries {
  private readonly logger = new Logger(RedisNodeQueries.name);
  private readonly requestChannel: string;
  private readonly replyChannel: string;
  private readonly pending = new Map<number, PendingQuery>();
  private nextId = 1;
  private lastSeenOthers: readonly string[] = [];

  /** The control instance: the query channels and the node registry. */
  private readonly link: RedisLink;

  constructor(
    /** A user's status lives on its partition's link (SPEC §13.4). */
    private readonly shards: RedisShards,
    private readonly names: ClusterNames,
    nodeId: string,
    private readonly budgetMs = QUERY_BUDGET_MS,
  ) {
    super(nodeId, false);
    this.link = shards.control;
    this.requestChannel = names.queries;
    this.replyChannel = names.queryAnswers(nodeId);
    this.link.onMessage((channel, message) => {
      if (channel === this.requestChannel) void this.onRequest(message);
      else if (channel === this.replyChannel) this.onReply(message);
    });
  }

  async start(): Promise<void> {
    await this.link.subscribe(this.requestChannel);
    await this.link.subscribe(this.replyChannel);
  }

  /** The status the presence scripts keep in the user's hash (one round trip); null when Redis cannot say. */
  async clusterStatusOf(userId: string): Promise<PresenceStatus | null> {
    if (!this.shards.ofName(userId).isUp) return null;
    try {
      return (await readStatuses(this.shards, this.names, [userId])).get(userId)![1];
    } catch {
      return null;
    }
  }

  async askEveryNode<T>(kind: string, args: unknown): Promise<ClusterAnswers<T>> {
    if (!this.link.isUp) {
      const value = (await this.answerHere(kind, args)) as T;
      return { answers: [[this.nodeId, value]], unreachable: [...this.lastSeenOthers].sort() };
    }
    const id = this.nextId++;
    let query!: PendingQuery;
    const settled = new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, this.budgetMs);
      timer.unref();
      const done = (): void => {
        clearTimeout(timer);
        resolve();
      };
      query = { answers: new Map(), expected: null, done };
    });
    this.pending.set(id, query);
    try {
      void this.broadcast(query, { i: id, f: this.nodeId, k: kind, a: args });
      this.record(query, this.nodeId, await this.answerHere(kind, args));
      await settled;
    } finally {
      this.pending.delete(id);
    }
    const expected = query.expected ?? new Set([this.nodeId, ...this.lastSeenOthers]);
    const unreachable = [...expected].filter((node) => !query.answers.has(node)).sort();
    return { answers: [...query.answers] as Array<[string, T]>, unreachable };
  }

  /** List the live nodes, then publish the request (a node that is not listed yet may answer too). */
  private async broadcast(query: PendingQuery, request: QueryRequest): Promise<void> {
    try {
      const others = await this.liveOthers();
      this.lastSeenOthers = others;
      query.expected = new Set([this.nodeId, ...others]);
      if (others.length > 0) await this.link.publish(this.requestChannel, JSON.stringify(request));
      this.checkDone(query);
    } catch (err) {
      this.logger.debug({ msg: 'query broadcast failed', error: (err as Error).message });
    }
  }

  private async liveOthers(): Promise<string[]> {
    const redis = this.link.command;
    const listed = (await redis.smembers(this.names.nodes)).filter((node) => node !== this.nodeId);
    if (listed.length === 0) return [];
    const alive = (await redis.pipeline(listed.map((node) => ['exists', this.names.alive(node)])).exec()) ?? [];
    return listed.filter((_, i) => alive[i]?.[1] === 1);
  }

  private async onRequest(message: Buffer): Promise<void> {
    const request = parse<QueryRequest>(message);
    if (request === null || request.f === this.nodeId) return;
    try {
      const value = await this.answerHere(request.k, request.a);
      const reply: QueryReply = { i: request.i, n: this.nodeId, v: value };
      await this.link.publish(this.names.queryAnswers(request.f), JSON.stringify(reply));
    } catch (err) {
      this.logger.warn({ msg: 'query not answered', kind: request.k, error: (err as Error).message });
    }
  }

  private onReply(message: Buffer): void {
    const reply = parse<QueryReply>(message);
    const query = reply === null ? undefined : this.pending.get(reply.i);
    if (query !== undefined) this.record(query, reply!.n, reply!.v);
  }

  private record(query: PendingQuery, node: string, value: unknown): void {
    query.answers.set(node, value);
    this.checkDone(query);
  }

  private checkDone(query: PendingQuery): void {
    if (query.expected === null) return;
    for (const node of query.expected) if (!query.answers.has(node)) return;
    query.done();
  }
}

function parse<T>(message: Buffer): T | null {
  try {
    return JSON.parse(message.toString('utf8')) as T;
  } catch {
    return null;
  }
}
