import { Injectable } from '@nestjs/common';
import * as http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { ServerOptions, WebSocketServer } from 'ws';
import { GatewayConfig, Handler } from '../config/gateway-config';
import { ConnectionRegistry } from '../connections/connection-registry';
import { gatewaySocketClass } from './gateway-socket';
import { HandshakeDecision, LEGACY_SUBPROTOCOL, SUBPROTOCOL, decideHandshake } from './handshake';
import {
  answerConnect,
  canAnswerRaw,
  clientErrorStatus,
  endWithStatus,
  listenerServerOptions,
} from './listener-guards';
import { ResumeRequest } from './resume-offer';
import { ResumeRate } from '../resume/resume-rate';
import { isResumeOffered } from '../resume/resume-settings';
import { connectionIdOfToken } from '../resume/session-token';
import { HandshakeRefusals } from './handshake-refusals';

/** Express (or any) request handler that serves the health routes. */
export type HealthRequestHandler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

const HEALTH_PATHS = new Set(['/health/live', '/health/ready']);
/** A closing handshake we started that the client does not finish within this is cut (SPEC §9; issue 11). */
export const CLOSE_HANDSHAKE_TIMEOUT_MS = 5000;

/**
 * The public listener (SPEC §1–2): a plain http.Server. Upgrades on a handler's
 * path pass the ordered handshake checks, then reach our WebSocketServer; GET
 * /health/* goes to the Nest app; everything else is 404.
 */
@Injectable()
export class PublicListener {
  readonly server: http.Server;
  readonly wss: WebSocketServer;
  private readonly handlersByPath: ReadonlyMap<string, Handler>;
  private healthHandler: HealthRequestHandler | null = null;
  private isAccepting = true;
  private readonly isResumeOffered: boolean;

  constructor(
    private readonly config: GatewayConfig,
    private readonly registry: ConnectionRegistry,
    private readonly resumeRate: ResumeRate,
    private readonly refusals: HandshakeRefusals,
  ) {
    this.handlersByPath = new Map(config.handlers.map((h) => [h.path, h]));
    this.isResumeOffered = isResumeOffered(config);
    this.server = http.createServer(listenerServerOptions(config.listeners.timeouts), (req, res) =>
      this.onRequest(req, res),
    );
    // ws 8.21 option, not yet in @types/ws: destroy the TCP connection when the client
    // never answers our close frame, instead of holding it until the heartbeat drops it.
    const options: ServerOptions & { closeTimeout: number } = {
      closeTimeout: CLOSE_HANDSHAKE_TIMEOUT_MS,
      noServer: true,
      clientTracking: false,
      perMessageDeflate: false,
      // A frame up to twice the limit reaches the codec, which names its size in the
      // fatal_error; a bigger one is refused by ws from its header, without buffering
      // it, and GatewaySocket adds the fatal_error there (SPEC §4.1).
      maxPayload: config.limits.maxFrameBytes * 2 + 1024,
      handleProtocols: (offered: Set<string>) => (offered.has(SUBPROTOCOL) ? SUBPROTOCOL : LEGACY_SUBPROTOCOL),
      WebSocket: gatewaySocketClass(config.limits.maxFrameBytes),
    };
    this.wss = new WebSocketServer(options);
    this.server.on('upgrade', (req: http.IncomingMessage, socket: Socket, head: Buffer) =>
      this.onUpgrade(req, socket, head),
    );
    this.server.on('connect', answerConnect);
    this.server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
      const status = clientErrorStatus(err);
      endWithStatus(socket, status, (http.STATUS_CODES[status] ?? 'bad request').toLowerCase());
    });
  }

  /** Where GET /health/live and /health/ready are served (the Nest app's Express instance). */
  setHealthHandler(handler: HealthRequestHandler): void {
    this.healthHandler = handler;
  }

  listen(host: string, port: number): Promise<AddressInfo> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => resolve(this.server.address() as AddressInfo));
    });
  }

  /**
   * Draining (issue 20): new upgrades get 503 while the listener keeps answering
   * `/health/ready` (503 then), so a load balancer's probe sees a drain, not a
   * refused connection, which many read as a crash. Open sockets stay.
   */
  refuseUpgrades(): void {
    this.isAccepting = false;
  }

  /** Stop listening and cut the plain HTTP connections still open (health probes); resolves once closed. */
  close(): Promise<void> {
    this.isAccepting = false;
    if (!this.server.listening) return Promise.resolve();
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeAllConnections();
    return closed;
  }

  private onRequest(req: http.IncomingMessage, res: http.ServerResponse): void {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method === 'GET' && HEALTH_PATHS.has(path) && this.healthHandler !== null) {
      this.healthHandler(req, res);
      return;
    }
    res.writeHead(404, { 'Content-Length': '0' }).end();
  }

  private onUpgrade(req: http.IncomingMessage, socket: Socket, head: Buffer): void {
    // A shared function, not a closure: a closure here would share this call's
    // context and keep `req` alive for the socket's whole life.
    socket.on('error', destroySocket);
    if (!this.isAccepting) return rejectSocket(socket, 503, 'shutting down');
    const decision = decideHandshake(req.url, req.headers, {
      handlersByPath: this.handlersByPath,
      allowedOrigins: this.config.allowedOrigins,
      connectionCount: this.registry.size,
      maxConnections: this.config.limits.maxConnections,
      isResumeOffered: this.isResumeOffered,
    });
    if (!decision.ok) return this.refuse(req, socket, decision.status, decision.text);
    const waitMs = this.resumeWaitMs(decision.resume);
    if (waitMs === 0) return this.upgrade(req, socket, head, decision);
    if (typeof waitMs === 'number') return this.refuseResume(req, socket, waitMs);
    void waitMs.then((ms) => this.upgradeCounted(req, socket, head, decision, ms));
  }

  /**
   * SPEC §12.2: a resume counts against its session's 10 in 10 s (the
   * session as its token names it; unverified, so nothing else is decided
   * here). 0: go on; else the ms until it may. A promise in cluster mode.
   */
  private resumeWaitMs(resume: ResumeRequest): number | Promise<number> {
    if (resume.kind !== 'resume') return 0;
    const connectionId = connectionIdOfToken(resume.offer.token);
    return connectionId === null ? 0 : this.resumeRate.admit(connectionId);
  }

  /** Cluster mode, once Redis counted the resume: the checks that may have changed meanwhile, then the upgrade. */
  private upgradeCounted(
    req: http.IncomingMessage,
    socket: Socket,
    head: Buffer,
    decision: HandshakeDecision & { ok: true },
    waitMs: number,
  ): void {
    if (socket.destroyed) return;
    if (waitMs > 0) return this.refuseResume(req, socket, waitMs);
    if (!this.isAccepting) return rejectSocket(socket, 503, 'shutting down');
    if (this.registry.size >= this.config.limits.maxConnections)
      return this.refuse(req, socket, 503, 'connection limit reached');
    this.upgrade(req, socket, head, decision);
  }

  private upgrade(
    req: http.IncomingMessage,
    socket: Socket,
    head: Buffer,
    decision: HandshakeDecision & { ok: true },
  ): void {
    this.wss.handleUpgrade(req, socket, head, (ws) =>
      this.wss.emit('connection', ws, req, decision.handler, decision.resume),
    );
  }

  private refuseResume(req: http.IncomingMessage, socket: Socket, waitMs: number): void {
    this.refuse(req, socket, 429, 'too many resumes of this session', `Retry-After: ${Math.ceil(waitMs / 1000)}\r\n`);
  }

  private refuse(req: http.IncomingMessage, socket: Socket, status: number, text: string, headers = ''): void {
    this.refusals.record(req, status);
    rejectSocket(socket, status, text, headers);
  }
}

function destroySocket(this: Socket): void {
  this.destroy();
}

/** `headers`: more header lines, each ending in CRLF. */
function rejectSocket(socket: Socket, status: number, text: string, headers = ''): void {
  if (!canAnswerRaw(socket)) return void socket.destroy();
  const body = text + '\n';
  socket.end(
    `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nConnection: close\r\n${headers}Content-Type: text/plain; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
}
