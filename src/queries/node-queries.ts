import type { PresenceStatus } from '../activity/activity.service';

/** SPEC §15.2: every live node is asked within this budget; one that has not answered by then is "unreachable". */
export const QUERY_BUDGET_MS = 2000;

/** Answers a query on this node: a JSON-able value from JSON-able arguments. */
export type QueryHandler = (args: unknown) => unknown;

/** What the nodes answered, by node id, and the live nodes that did not answer within the budget. */
export interface ClusterAnswers<T> {
  readonly answers: ReadonlyArray<readonly [string, T]>;
  readonly unreachable: readonly string[];
}

/**
 * The seam of cluster-wide queries (STYLE rule 11): one implementation per
 * mode. A query is data (a kind and JSON arguments), so this knows nothing of
 * connections or topics; the handlers registered with `answer` do.
 */
export abstract class NodeQueries {
  protected readonly handlers = new Map<string, QueryHandler>();

  constructor(
    readonly nodeId: string,
    /** One node: no other node's answers to merge (nothing is sent for that). */
    readonly isAlone: boolean,
  ) {}

  answer(kind: string, handler: QueryHandler): void {
    this.handlers.set(kind, handler);
  }

  /** A user's cluster-wide status where the cluster keeps it (Redis); null on one node, where the sessions are here. */
  abstract clusterStatusOf(userId: string): Promise<PresenceStatus | null>;

  /** Ask every live node (this one included) within {@link QUERY_BUDGET_MS}. */
  abstract askEveryNode<T>(kind: string, args: unknown): Promise<ClusterAnswers<T>>;

  /** This node's own answer. Throws (a bug) for a kind nobody answers. */
  protected async answerHere(kind: string, args: unknown): Promise<unknown> {
    const handler = this.handlers.get(kind);
    if (handler === undefined) throw new Error(`no query handler for ${kind}`);
    return handler(args);
  }
}

/** Single node: this node is every node. */
export class LocalNodeQueries extends NodeQueries {
  clusterStatusOf(): Promise<null> {
    return Promise.resolve(null);
  }

  async askEveryNode<T>(kind: string, args: unknown): Promise<ClusterAnswers<T>> {
    return { answers: [[this.nodeId, (await this.answerHere(kind, args)) as T]], unreachable: [] };
  }
}
