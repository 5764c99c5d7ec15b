import { Injectable, OnModuleInit } from '@nestjs/common';
import { GatewayConfig } from '../config/gateway-config';
import { Connection } from '../connections/connection';
import { ConnectionRegistry } from '../connections/connection-registry';
import { LatticeService } from '../lattice/lattice.service';
import { PubSubService } from '../pubsub/pubsub.service';
import { ActivityService, PresenceStatus } from '../activity/activity.service';
import { PresenceService } from '../users-lattice/presence.service';
import {
  ListArgs,
  QueryState,
  USER_IDS_MAX,
  distinctUsers,
  nodeSlice,
  queryStateOf,
  sizeOf,
  usersOverNodes,
} from './node-answers';
import { ClusterAnswers, NodeQueries } from './node-queries';
import { NodeSlice, PageStart, mergePage, sliceOf, sliceStart } from './query-page';
import { ResumableSessionsService } from '../resume/resumable-sessions.service';

export interface ConnectionAnswer {
  readonly connection_id: string;
  readonly user_id: string | null;
  /** null: a session held by no node (its node drained or died, not resumed yet). */
  readonly node: string | null;
  readonly state: QueryState;
  readonly topics: string[];
  readonly lattices: string[];
  readonly watches_users: boolean;
}

interface ConnectionEntry {
  readonly connection_id: string;
  readonly node: string | null;
  readonly state: QueryState;
}

interface UserPart {
  readonly status: PresenceStatus | null;
  readonly slice: NodeSlice<ConnectionEntry>;
}

interface TopicPart {
  readonly subscribers: number;
  readonly users: number;
  readonly userIds: string[] | null;
  readonly slice: NodeSlice<string> | null;
}

export interface NodeInfo {
  readonly node_id: string;
  readonly connections: number;
  readonly detached: number;
  readonly topics: number;
  readonly namespaces: number;
  readonly version: string;
  readonly uptime_s: number;
}

/** A page request: where it starts and how long it is. */
export interface PageRequest {
  readonly from: PageStart;
  readonly limit: number;
}

/** `"unreachable"` only when some node did not answer (SPEC §15.2), so a healthy answer has the listed shape. */
type WithUnreachable<T> = T & { unreachable?: string[] };

/**
 * SPEC §15.2 queries: each node answers for what it holds (its registry,
 * topic index, lattice and presence state, all kept counts or bounded
 * walks), and this merges the answers of every live node.
 */
@Injectable()
export class QueriesService implements OnModuleInit {
  private readonly startedAt = Date.now();

  constructor(
    private readonly queries: NodeQueries,
    private readonly registry: ConnectionRegistry,
    private readonly pubsub: PubSubService,
    private readonly lattices: LatticeService,
    private readonly presence: PresenceService,
    private readonly activity: ActivityService,
    private readonly config: GatewayConfig,
    private readonly resumables: ResumableSessionsService,
  ) {}

  onModuleInit(): void {
    this.queries.answer('connection', (cid) => this.connectionHere(cid as string));
    this.queries.answer('user', (args) => this.userHere(args as ListArgs & { uid: string }));
    this.queries.answer('topic', (args) => this.topicHere(args as ListArgs & { topic: string; ids: boolean }));
    this.queries.answer('info', () => this.infoHere());
  }

  /** `found` null: no node that answered holds it (404 unknown_connection, with the silent nodes). */
  async connection(cid: string): Promise<{ found: WithUnreachable<ConnectionAnswer> | null; unreachable: string[] }> {
    const { answers, unreachable } = await this.queries.askEveryNode<ConnectionAnswer | null>('connection', cid);
    const found = answers.find(([, answer]) => answer !== null)?.[1] ?? (await this.orphanedConnection(cid));
    return { found: found === null ? null : withUnreachable(found, unreachable), unreachable: [...unreachable] };
  }

  async userConnections(uid: string, page: PageRequest) {
    const [asked, clusterStatus, orphans] = await Promise.all([
      this.queries.askEveryNode<UserPart>('user', { uid, ...page }),
      this.queries.clusterStatusOf(uid),
      this.resumables.orphanedSessionsOf(uid),
    ]);
    const statuses = asked.answers.map(([, part]) => part.status);
    const status =
      clusterStatus ??
      (statuses.includes('active') ? 'active' : statuses.includes('inactive') ? 'inactive' : 'offline');
    const slices = asked.answers.map(([node, part]) => [node, part.slice] as const);
    // Sessions held by no node are one more slice, under a name no node id can take.
    const orphanEntries = orphans.map((id): ConnectionEntry => ({ connection_id: id, node: null, state: 'detached' }));
    const start = sliceStart(ORPHANS, orphanEntries.length, page.from);
    const orphanSlice = sliceOf(orphanEntries, orphanEntries.length, start, page.limit);
    const { items, cursor } = mergePage([...slices, [ORPHANS, orphanSlice] as const], page.limit);
    return withUnreachable({ user_id: uid, status, connections: items, cursor }, asked.unreachable);
  }

  async topic(topic: string, page: PageRequest | null) {
    const [asked, history] = await Promise.all([
      this.queries.askEveryNode<TopicPart>('topic', {
        topic,
        ids: page !== null,
        ...(page ?? { from: null, limit: 0 }),
      }),
      this.pubsub.historyOf(topic),
    ]);
    const parts = asked.answers.map(([, part]) => part);
    const subscribers = parts.reduce((sum, part) => sum + part.subscribers, 0);
    const users = usersOverNodes(parts);
    const answer = { topic, subscribers, users, history };
    if (page === null) return withUnreachable(answer, asked.unreachable);
    const slices = asked.answers.map(([node, part]) => [node, part.slice!] as const);
    const { items, cursor } = mergePage(slices, page.limit);
    return withUnreachable({ ...answer, connection_ids: items, cursor }, asked.unreachable);
  }

  async info() {
    const { answers, unreachable } = await this.queries.askEveryNode<NodeInfo>('info', null);
    const nodes = answers.map(([, info]) => info).sort((a, b) => (a.node_id < b.node_id ? -1 : 1));
    return withUnreachable({ nodes }, unreachable);
  }

  /** A session held by no node, from its record (cluster mode). */
  private async orphanedConnection(cid: string): Promise<ConnectionAnswer | null> {
    const orphan = await this.resumables.orphanedSession(cid);
    if (orphan === null) return null;
    return {
      connection_id: cid,
      user_id: orphan.userId,
      node: null,
      state: 'detached',
      topics: orphan.topics,
      lattices: orphan.namespaces,
      watches_users: orphan.isWatching,
    };
  }

  private connectionHere(cid: string): ConnectionAnswer | null {
    const connection = this.registry.get(cid);
    const state = connection === undefined ? null : queryStateOf(connection.state);
    if (connection === undefined || state === null) return null;
    return {
      connection_id: cid,
      user_id: connection.userId,
      node: this.queries.nodeId,
      state,
      topics: [...this.pubsub.topicsOf(connection)],
      lattices: this.lattices.namespacesOf(connection),
      watches_users: this.presence.watchListOf(connection) !== null,
    };
  }

  private userHere(args: ListArgs & { uid: string }): UserPart {
    const connections = this.registry.ofUser(args.uid);
    const slice = nodeSlice(this.queries.nodeId, connections, sizeOf(connections), args, (c) => this.entryOf(c));
    return { status: this.activity.statusOf(args.uid), slice };
  }

  private async topicHere(args: ListArgs & { topic: string; ids: boolean }): Promise<TopicPart> {
    const subscribers = this.pubsub.subscribersOf(args.topic);
    const count = this.pubsub.subscriberCount(args.topic);
    const slice = args.ids ? nodeSlice(this.queries.nodeId, subscribers, count, args, (c: Connection) => c.id) : null;
    const users = await distinctUsers(subscribers);
    const userIds = this.queries.isAlone || users.size > USER_IDS_MAX ? null : [...users];
    return { subscribers: count, users: users.size, userIds, slice };
  }

  private infoHere(): NodeInfo {
    const live = this.registry.liveCount;
    return {
      node_id: this.queries.nodeId,
      connections: live,
      detached: this.registry.size - live,
      topics: this.pubsub.topicCount,
      namespaces: this.lattices.namespaceCount,
      version: this.config.version,
      uptime_s: Math.floor((Date.now() - this.startedAt) / 1000),
    };
  }

  private entryOf(connection: Connection): ConnectionEntry {
    return { connection_id: connection.id, node: this.queries.nodeId, state: queryStateOf(connection.state)! };
  }
}

/** The page slice of sessions held by no node: ':' cannot be in a node id, so no node takes this name. */
const ORPHANS = ':orphans';

function withUnreachable<T extends object>(answer: T, unreachable: readonly string[]): WithUnreachable<T> {
  return unreachable.length === 0 ? answer : { ...answer, unreachable: [...unreachable] };
}
