import { HttpException, Injectable, Logger } from '@nestjs/common';
import { ClusterUnavailableError } from '../cluster/cluster-unavailable.error';
import { LatticeService } from '../lattice/lattice.service';
import { PubSubService } from '../pubsub/pubsub.service';
import { PresenceService } from '../users-lattice/presence.service';
import { ROUTES, RouteMatcher, RouteParams, compileRoute } from './api-routes';
import { BackendApiError, notFound } from './backend-api.error';
import { BatchCommand, BatchMethod, BatchResult } from './batch-envelope';
import { checkNoBody, latticeBodyOf, missingBody, userListOf } from './body.pipes';
import { jsonText } from './json-text';
import { DisconnectService } from './disconnect.service';
import { ConnectionIdPipe, NamespacePipe, TopicPipe, UserIdPipe } from './path-params';

/** One endpoint as a batch command: its route, and the controller's work on already read input. */
interface CommandRoute {
  readonly method: BatchMethod;
  readonly match: RouteMatcher;
  /** Path pipes in parameter order, then the body check, then the service call (as Nest runs a controller). */
  readonly run: (params: RouteParams, command: BatchCommand) => Promise<void>;
}

const NO_CONTENT: BatchResult = Object.freeze({ status: 204 });
const PATH_END = /[?#]/;

/**
 * `POST /v1/batch` (SPEC §5 [ext]): each command is checked with the single
 * endpoints' own pipes and checks (body.pipes.ts, path-params.ts) and goes to
 * the same service call, so it has the status the endpoint would have given.
 * Commands are started in order, each service call returning its own Promise,
 * so a broker can later group the commands bound for one node.
 */
@Injectable()
export class BatchService {
  private readonly logger = new Logger(BatchService.name);
  private readonly routes: readonly CommandRoute[];

  constructor(
    pubsub: PubSubService,
    lattices: LatticeService,
    presence: PresenceService,
    disconnects: DisconnectService,
  ) {
    const cid = new ConnectionIdPipe();
    const topic = new TopicPipe();
    const namespace = new NamespacePipe();
    const userId = new UserIdPipe();
    const route = (method: BatchMethod, template: string, run: CommandRoute['run']): CommandRoute => ({
      method,
      match: compileRoute(template),
      run,
    });
    this.routes = [
      route('PUT', ROUTES.topicSubscription, (p, c) => {
        const [connectionId, name] = [cid.transform(p.cid), topic.transform(p.topic), noBody(c)];
        return pubsub.subscribe(connectionId, name);
      }),
      route('DELETE', ROUTES.topicSubscription, (p, c) => {
        const [connectionId, name] = [cid.transform(p.cid), topic.transform(p.topic), noBody(c)];
        return pubsub.unsubscribe(connectionId, name);
      }),
      route('POST', ROUTES.publish, (p, c) => {
        const name = topic.transform(p.topic);
        return pubsub.publish(name, Buffer.from(jsonText(bodyOf(c))));
      }),
      route('PUT', ROUTES.latticeSubscription, (p, c) => {
        const [connectionId, ns] = [cid.transform(p.cid), namespace.transform(p.namespace)];
        return lattices.subscribe(connectionId, ns, latticeBodyOf(bodyOf(c)));
      }),
      route('DELETE', ROUTES.latticeSubscription, (p, c) => {
        const [connectionId, ns] = [cid.transform(p.cid), namespace.transform(p.namespace), noBody(c)];
        return lattices.unsubscribe(connectionId, ns);
      }),
      route('POST', ROUTES.latticeUpdate, (p, c) => {
        const ns = namespace.transform(p.namespace);
        return lattices.update(ns, latticeBodyOf(bodyOf(c)));
      }),
      route('PUT', ROUTES.usersSubscription, (p, c) => {
        const connectionId = cid.transform(p.cid);
        return presence.subscribe(connectionId, userListOf(bodyOf(c)));
      }),
      route('PUT', ROUTES.userUsers, (p, c) => {
        const user = userId.transform(p.uid);
        return presence.addForUser(user, userListOf(bodyOf(c)));
      }),
      route('DELETE', ROUTES.usersSubscription, (p, c) => {
        const [connectionId] = [cid.transform(p.cid), noBody(c)];
        return presence.unsubscribe(connectionId);
      }),
      route('DELETE', ROUTES.connection, (p, c) => {
        const [connectionId] = [cid.transform(p.cid), noBody(c)];
        return disconnects.disconnect(connectionId);
      }),
      route('DELETE', ROUTES.userConnections, (p, c) => {
        const [user] = [userId.transform(p.uid), noBody(c)];
        return disconnects.disconnectUser(user);
      }),
    ];
  }

  /** Start every command in order, then answer one result per command, in order. */
  async run(commands: readonly BatchCommand[]): Promise<{ results: BatchResult[] }> {
    const started = commands.map((command) => this.start(command));
    const results = new Array<BatchResult>(started.length);
    for (let i = 0; i < started.length; i++) {
      const outcome = started[i];
      results[i] =
        outcome instanceof Promise
          ? await outcome.then(
              () => NO_CONTENT,
              (err: unknown) => this.resultOf(err),
            )
          : outcome;
    }
    return { results };
  }

  /** Check and start one command: its service Promise, or already its result. */
  private start(command: BatchCommand): Promise<void> | BatchResult {
    const path = command.path.split(PATH_END, 1)[0];
    // As BackendApiEntryMiddleware: an empty path part is a 404.
    if (path.slice(1).split('/').includes('')) return this.resultOf(notFound());
    for (const route of this.routes) {
      if (route.method !== command.method) continue;
      const params = route.match(path);
      if (params === null) continue;
      if (params === undefined) break;
      try {
        return route.run(params, command);
      } catch (err) {
        return this.resultOf(err);
      }
    }
    return this.resultOf(notFound());
  }

  /** The status and body the backend API filter would have written for `err`. */
  private resultOf(err: unknown): BatchResult {
    if (err instanceof BackendApiError)
      return err.status === 400 ? { status: 400, error: err.code, message: err.detail } : { status: err.status };
    if (err instanceof HttpException) return { status: err.getStatus() };
    // SPEC §11: this command needs a node that cannot be reached now; the caller may retry it.
    if (err instanceof ClusterUnavailableError) return { status: 503, error: err.code, message: err.message };
    this.logger.error({ msg: 'backend API handler failed', error: err instanceof Error ? err.name : 'unknown' });
    return { status: 500, error: 'internal_error', message: 'unexpected server error' };
  }
}

/** Endpoints 1, 2, 5, 9 and the §12.6 disconnects (checkNoBody), checked after the path as Nest runs the pipes. */
function noBody(command: BatchCommand): void {
  checkNoBody(command.hasBody);
}

/** Endpoints 3, 4, 6, 7, 8: the parsed body, 400 when there is none. */
function bodyOf(command: BatchCommand): unknown {
  if (!command.hasBody) throw missingBody();
  return command.body;
}
