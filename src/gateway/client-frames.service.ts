import { Injectable, Logger } from '@nestjs/common';
import { GatewayConfig } from '../config/gateway-config';
import { Connection } from '../connections/connection';
import { GatewayMetrics } from '../metrics/gateway-metrics';
import { CLOSE_POLICY_VIOLATION, REASON_EARLY_FRAMES_OVER_LIMIT, REASON_VALIDATION_ERROR } from '../protocol/close-codes';
import { activeSeconds, checkCall, isFrameFault, parseClientFrame } from '../protocol/frame-codec';
import { ClientCall, encodeCallFault, encodeError, encodeFatalError } from '../protocol/frames';
import { SessionsService } from '../sessions/sessions.service';
import { callReply } from '../upstream/call-reply';
import { Route } from '../upstream/destinations';
import { UpstreamResponse, failureCause, outcomeLabel } from '../upstream/upstream-response';
import { UpstreamClient } from '../upstream/upstream.client';
import { UpstreamRoutes } from '../upstream/upstream-routes';

/**
 * The frame path (SPEC §4): codec → call checks → upstream → reply. Frames of a
 * pending connection wait for hello. Nothing here throws to the socket: a bug
 * is logged with the connection id and answered with internal_error.
 */
@Injectable()
export class ClientFramesService {
  private readonly logger = new Logger(ClientFramesService.name);
  private readonly maxFrameBytes: number;
  private readonly maxEarlyBytes: number;
  private readonly counted;
  private readonly sent;
  /** LOG_LEVEL=debug, read once: off, the call path does no logging work (issue 20). */
  private readonly isDebug: boolean;

  constructor(
    config: GatewayConfig,
    private readonly upstream: UpstreamClient,
    private readonly routes: UpstreamRoutes,
    private readonly sessions: SessionsService,
    metrics: GatewayMetrics,
  ) {
    this.maxFrameBytes = config.limits.maxFrameBytes;
    this.maxEarlyBytes = config.limits.clientQueueMaxBytes;
    this.isDebug = config.log.level === 'debug';
    const frames = metrics.clientFrames;
    this.counted = { call: frames.labels('call'), fatal: frames.labels('fatal'), invalid: frames.labels('invalid'), internal: frames.labels('internal_error') };
    const sent = metrics.framesSent;
    this.sent = { result: sent.labels('result'), error: sent.labels('error'), fatal: sent.labels('fatal_error') };
  }

  /** One WebSocket message from `connection`. */
  onFrame(connection: Connection, data: Buffer, isBinary: boolean): void {
    connection.lastSeenAt = Date.now();
    if (connection.state === 'pending') return this.keepEarly(connection, data, isBinary);
    if (connection.state !== 'ready') return;
    try {
      this.handle(connection, data, isBinary);
    } catch (err) {
      this.onBug(connection, err, undefined);
    }
  }

  private handle(connection: Connection, data: Buffer, isBinary: boolean): void {
    const call = parseClientFrame(data, isBinary, this.maxFrameBytes);
    if (isFrameFault(call)) {
      this.counted.fatal.inc();
      this.sent.fatal.inc();
      // [fix] swindon dropped TCP silently; SPEC §4.1 answers and closes with 1007/1003/1009.
      connection.close(call.closeCode, REASON_VALIDATION_ERROR, encodeFatalError('validation_error', JSON.stringify(call.text)));
      return;
    }
    const fault = checkCall(call, data.length);
    if (fault !== null) {
      this.counted.invalid.inc();
      if (connection.send(encodeCallFault(call.meta, fault.text))) this.sent.error.inc();
      return;
    }
    this.counted.call.inc();
    const active = activeSeconds(call.meta);
    if (active !== null) this.sessions.touch(connection.userId!, active);
    this.forward(connection, call).catch((err: unknown) => this.onBug(connection, err, call));
  }

  private async forward(connection: Connection, call: ClientCall): Promise<void> {
    const route = this.routes.tableFor(connection.handler).route(call.method);
    // SPEC §4.2: the server's connection_id overrides a client-sent one.
    const body = JSON.stringify([{ ...call.meta, connection_id: connection.id }, call.args, call.kwargs]);
    const requestId = route.destination.requestIdHeader === null ? undefined : `${connection.id}-${String(call.meta.request_id)}`;
    const headers = { authorization: connection.identity!.authorization, requestId };
    const startedAt = this.isDebug ? performance.now() : 0;
    const response = await this.upstream.post(route, body, headers, 'call');
    if (this.isDebug) this.logCall(connection, call, route, response, startedAt);
    const reply = callReply(call.meta, response);
    if (connection.send(reply.frame)) (reply.outcome === 'ok' ? this.sent.result : this.sent.error).inc();
  }

  /** One debug line per call: ids, method, destination, outcome, duration; never args, kwargs or the answer (SPEC §10). */
  private logCall(connection: Connection, call: ClientCall, route: Route, response: UpstreamResponse, startedAt: number): void {
    const outcome = outcomeLabel(response);
    const cause = outcome === 'ok' ? undefined : failureCause(response);
    const durationMs = Math.round((performance.now() - startedAt) * 10) / 10;
    this.logger.debug({ msg: 'call', connection_id: connection.id, method: call.method, destination: route.destination.name, outcome, cause, duration_ms: durationMs });
  }

  private keepEarly(connection: Connection, data: Buffer, isBinary: boolean): void {
    if (!connection.keepEarlyFrame({ data, isBinary }, this.maxEarlyBytes)) {
      connection.close(CLOSE_POLICY_VIOLATION, REASON_EARLY_FRAMES_OVER_LIMIT);
    }
  }

  private onBug(connection: Connection, err: unknown, call: ClientCall | undefined): void {
    this.counted.internal.inc();
    this.logger.error({ msg: 'frame handler failed', connection_id: connection.id, error: err instanceof Error ? err.name : 'unknown' });
    const meta = call === undefined ? {} : { request_id: call.meta.request_id };
    if (connection.send(encodeError(meta, 'internal_error', 'null'))) this.sent.error.inc();
  }
}
