import { Injectable, Logger } from '@nestjs/common';
import type { IncomingMessage } from 'node:http';
import { AuthRequest, AuthService } from '../auth/auth.service';
import { Connection } from '../connections/connection';
import { ConnectionRegistry } from '../connections/connection-registry';
import { LatticeService } from '../lattice/lattice.service';
import { GatewayMetrics } from '../metrics/gateway-metrics';
import { REASON_BACKEND_ERROR, backendErrorCloseCode } from '../protocol/close-codes';
import { encodeFatalError, encodeHello } from '../protocol/frames';
import { SessionsService } from '../sessions/sessions.service';
import { PresenceService } from '../users-lattice/presence.service';
import { ClientFramesService } from './client-frames.service';
import { hasDuplicateCredentialHeaders, queryStringOf } from './handshake';

/**
 * The life of a connection up to and right after `hello` (SPEC §2–3), written
 * in the order the spec gives.
 */
@Injectable()
export class HelloService {
  private readonly logger = new Logger(HelloService.name);
  private readonly helloSent;
  private readonly fatalSent;

  constructor(
    private readonly auth: AuthService,
    private readonly registry: ConnectionRegistry,
    private readonly frames: ClientFramesService,
    private readonly sessions: SessionsService,
    private readonly lattices: LatticeService,
    private readonly presence: PresenceService,
    metrics: GatewayMetrics,
  ) {
    this.helloSent = metrics.framesSent.labels('hello');
    this.fatalSent = metrics.framesSent.labels('fatal_error');
  }

  /**
   * Authorize `connection` and, when the backend agrees, run the hello
   * sequence. Reads what it needs from `req` at once, so the upgrade request
   * is not kept while the backend answers.
   */
  start(connection: Connection, req: IncomingMessage): Promise<void> {
    if (hasDuplicateCredentialHeaders(req.rawHeaders)) {
      // SPEC §2: no backend call; fatal 400 and close 4400.
      return this.authorizeThenGreet(connection, null);
    }
    return this.authorizeThenGreet(connection, {
      cookie: req.headers.cookie ?? null,
      authorization: req.headers.authorization ?? null,
      queryString: queryStringOf(req.url),
    });
  }

  /** `request` null: refused before asking the backend (SPEC §2 duplicate credentials). */
  private async authorizeThenGreet(connection: Connection, request: AuthRequest | null): Promise<void> {
    if (request === null) return this.refuse(connection, 400, 'null');
    const outcome = await this.auth.authorize(connection, request);
    // [fix] an answer that arrives after its client left is ignored.
    if (connection.state !== 'pending') return;
    if (!outcome.ok) return this.refuse(connection, outcome.status, outcome.dataJson);
    connection.identity = outcome.identity;
    this.registry.bindUser(connection, outcome.identity.userId);
    // Announce the session while still pending: this connection's own status reaches it
    // in its snapshot after hello, not as a separate push (SPEC §3).
    this.sessions.authorized(connection);
    connection.state = 'ready';
    if (Logger.isLevelEnabled('log')) this.logger.log({ msg: 'connection authorized', connection_id: connection.id, user_id: outcome.identity.userId });
    this.sendHelloSequence(connection);
  }

  /** SPEC §3 order: hello → buffered messages → lattice snapshots → users snapshot → early client frames. */
  private sendHelloSequence(connection: Connection): void {
    const early = connection.takeEarly();
    connection.send(encodeHello(connection.identity!.json));
    this.helloSent.inc();
    for (const frame of early.messages) connection.send(frame);
    this.lattices.sendSnapshots(connection);
    this.presence.sendSnapshot(connection);
    for (const frame of early.frames) this.frames.onFrame(connection, frame.data, frame.isBinary);
  }

  private refuse(connection: Connection, status: number, dataJson: string): void {
    connection.takeEarly();
    connection.close(backendErrorCloseCode(status), REASON_BACKEND_ERROR, encodeFatalError('http_error', dataJson, status));
    this.fatalSent.inc();
  }
}
