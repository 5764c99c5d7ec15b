import { Injectable, Logger } from '@nestjs/common';
import type { IncomingMessage } from 'node:http';
import { AuthRequest, AuthService } from '../auth/auth.service';
import { Connection } from '../connections/connection';
import { ConnectionRegistry } from '../connections/connection-registry';
import { GatewayMetrics } from '../metrics/gateway-metrics';
import { REASON_BACKEND_ERROR, backendErrorCloseCode } from '../protocol/close-codes';
import { encodeFatalError } from '../protocol/frames';
import { ActivityService } from '../activity/activity.service';
import { PubSubService } from '../pubsub/pubsub.service';
import { hasDuplicateCredentialHeaders, queryStringOf } from './handshake';
import { HelloSequenceService } from './hello-sequence.service';
import { SessionResumeService } from './session-resume.service';
import { AuthLifetimeService } from './auth-lifetime.service';

/**
 * The life of a connection up to `hello` (SPEC §2–3): authorize, then refuse
 * or bind the user, start its session and hand over to the hello sequence.
 */
@Injectable()
export class HelloService {
  private readonly logger = new Logger(HelloService.name);
  private readonly fatalSent;

  constructor(
    private readonly auth: AuthService,
    private readonly registry: ConnectionRegistry,
    private readonly activity: ActivityService,
    private readonly helloSequence: HelloSequenceService,
    private readonly resumer: SessionResumeService,
    private readonly lifetimes: AuthLifetimeService,
    private readonly pubsub: PubSubService,
    metrics: GatewayMetrics,
  ) {
    this.fatalSent = metrics.framesSent.labels('fatal_error');
  }

  /**
   * Authorize `connection` and, when the backend agrees, run the hello
   * sequence. Reads what it needs from `req` at once, so the upgrade request
   * is not kept while the backend answers.
   */
  start(connection: Connection, req: IncomingMessage, helloMetaJson = '{}'): Promise<void> {
    // SPEC §2: Cookie or Authorization sent twice gets no backend call (null): fatal 400, close 4400.
    const request = hasDuplicateCredentialHeaders(req.rawHeaders)
      ? null
      : {
          cookie: req.headers.cookie ?? null,
          authorization: req.headers.authorization ?? null,
          queryString: queryStringOf(req.url),
        };
    return this.authorizeThenGreet(connection, request, helloMetaJson);
  }

  private async authorizeThenGreet(
    connection: Connection,
    request: AuthRequest | null,
    helloMetaJson: string,
  ): Promise<void> {
    if (request === null) return this.refuse(connection, 400, 'null');
    const outcome = await this.auth.authorize(connection, request);
    // [fix] an answer that arrives after its client left is ignored.
    if (connection.state !== 'pending') return;
    if (!outcome.ok) return this.refuse(connection, outcome.status, outcome.dataJson);
    connection.identity = outcome.identity;
    // SPEC §14: before the session's record is written (cluster mode), which carries the lifetime's end.
    this.lifetimes.started(connection, outcome.lifetimeMs);
    this.registry.bindUser(connection, outcome.identity.userId);
    // Announce the session while still pending: this connection's own status reaches it
    // in its snapshot after hello, not as a separate push (SPEC §3).
    // Cluster mode: resolves once Redis counted the connection (single node: synchronous).
    const counted = this.activity.authorized(connection);
    // Cluster mode: a resumable session's record is written meanwhile (SPEC §12.5), in the same round trip time.
    const recorded = this.resumer.started(connection);
    // SPEC §15.1: applied as a /v1 subscribe before hello (cluster mode: once this node listens on Redis).
    const subscribed = outcome.subscribe?.map((topic) => this.pubsub.subscribe(connection.id, topic));
    if (counted !== undefined || recorded !== undefined || subscribed !== undefined) {
      await Promise.all([counted, recorded, ...(subscribed ?? [])]);
      if (connection.state !== 'pending') return; // left meanwhile: its removal already undid the count
    }
    connection.state = 'ready';
    if (Logger.isLevelEnabled('log'))
      this.logger.log({ msg: 'connection authorized', connection_id: connection.id, user_id: outcome.identity.userId });
    this.helloSequence.send(connection, helloMetaJson);
  }

  private refuse(connection: Connection, status: number, dataJson: string): void {
    connection.takeEarly();
    connection.close(
      backendErrorCloseCode(status),
      REASON_BACKEND_ERROR,
      encodeFatalError('http_error', dataJson, status),
    );
    this.fatalSent.inc();
  }
}
