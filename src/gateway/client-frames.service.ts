import { Injectable, Logger } from '@nestjs/common';
import { GatewayConfig } from '../config/gateway-config';
import { Connection } from '../connections/connection';
import { GatewayMetrics } from '../metrics/gateway-metrics';
import {
  CLOSE_MESSAGE_TOO_BIG,
  CLOSE_POLICY_VIOLATION,
  REASON_EARLY_FRAMES_OVER_LIMIT,
  REASON_VALIDATION_ERROR,
} from '../protocol/close-codes';
import { activeSeconds, checkCall, isFrameFault, parseClientFrame } from '../protocol/frame-codec';
import { ClientCall, encodeCallFault, encodeError, encodeFatalError } from '../protocol/frames';
import { ActivityService } from '../activity/activity.service';
import { GatewayTracer } from '../tracing/gateway-tracer';
import { callReply } from '../upstream/call-reply';
import { Route } from '../upstream/destinations';
import { UpstreamResponse, failureCause, outcomeLabel } from '../upstream/upstream-response';
import { UpstreamClient } from '../upstream/upstream.client';
import { UpstreamRoutes } from '../upstream/upstream-routes';

const QUEUE_FULL: UpstreamResponse = { kind: 'queue_full' };
/** SPEC §3: client frames a connection may have the gateway hold before its hello. */
const EARLY_FRAMES_MAX_BYTES = 64 * 1024;

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
  private readonly maxPendingCalls: number;
  /** Connections paused this turn for flooding; resumed together on the next one. */
  private readonly pausedFloods: Connection[] = [];
  private readonly resumeFloods = (): void => {
    for (const connection of this.pausedFloods) if (connection.state !== 'closed') connection.socket.resume();
    this.pausedFloods.length = 0;
  };
  private readonly counted;
  private readonly sent;
  private readonly isTracing: boolean;
  /** LOG_LEVEL=debug, read once: off, the call path does no logging work (issue 20). */
  private readonly isDebug: boolean;

  constructor(
    config: GatewayConfig,
    private readonly upstream: UpstreamClient,
    private readonly routes: UpstreamRoutes,
    private readonly activity: ActivityService,
    metrics: GatewayMetrics,
    private readonly tracer: GatewayTracer,
  ) {
    this.isTracing = tracer.isEnabled;
    this.maxFrameBytes = config.limits.maxFrameBytes;
    this.maxEarlyBytes = Math.min(EARLY_FRAMES_MAX_BYTES, config.limits.clientQueueMaxBytes);
    this.maxPendingCalls = config.limits.clientMaxPendingCalls;
    this.isDebug = config.log.level === 'debug';
    const frames = metrics.clientFrames;
    this.counted = {
      call: frames.labels('call'),
      fatal: frames.labels('fatal'),
      invalid: frames.labels('invalid'),
      internal: frames.labels('internal_error'),
      tooMany: frames.labels('too_many_requests'),
    };
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
      // [fix] swindon dropped TCP silently; SPEC §4.1 answers and closes with 1007/1003/1009.
      return this.closeWithFatal(connection, call.closeCode, REASON_VALIDATION_ERROR, call.text);
    }
    const fault = checkCall(call, data.length);
    if (fault !== null) {
      this.counted.invalid.inc();
      if (connection.send(encodeCallFault(call.meta, fault.text))) this.sent.error.inc();
      return;
    }
    const active = activeSeconds(call.meta);
    if (active !== null) this.activity.touch(connection.userId!, active);
    if (connection.pendingCalls >= this.maxPendingCalls) return this.refuseTooMany(connection, call);
    this.counted.call.inc();
    this.forward(connection, call).catch((err: unknown) => this.onBug(connection, err, call));
  }

  /**
   * SPEC §1 CLIENT_MAX_PENDING_CALLS: answered at once as a full queue is (§4.3), no upstream request.
   * A connection over its limit is flooding: it stops being read until the next turn of the event
   * loop, so the frames of one socket read are answered and then everybody else gets a turn (a
   * socket's backlog is otherwise read up to 32 × 64 KiB at a time, seconds of refusals that would
   * delay every login and call behind them).
   */
  private refuseTooMany(connection: Connection, call: ClientCall): void {
    this.counted.tooMany.inc();
    if (connection.send(callReply(call.meta, QUEUE_FULL).frame)) this.sent.error.inc();
    if (connection.socket.isPaused) return;
    connection.socket.pause();
    if (this.pausedFloods.push(connection) === 1) setImmediate(this.resumeFloods);
  }

  private async forward(connection: Connection, call: ClientCall): Promise<void> {
    const route = this.routes.tableFor(connection.handler).route(call.method);
    // SPEC §4.2: the server's connection_id overrides a client-sent one.
    const body = JSON.stringify([{ ...call.meta, connection_id: connection.id }, call.args, call.kwargs]);
    const requestId =
      route.destination.requestIdHeader === null ? undefined : `${connection.id}-${String(call.meta.request_id)}`;
    const span = this.isTracing ? this.tracer.startCall(connection.id, call.method, route.destination.name) : null;
    const headers = { authorization: connection.identity!.authorization, requestId, traceparent: span?.traceparent };
    const startedAt = this.isDebug ? performance.now() : 0;
    // post() never rejects, so the count always comes back down.
    connection.pendingCalls++;
    const response = await this.upstream.post(route, body, headers, 'call');
    connection.pendingCalls--;
    if (this.isDebug) this.logCall(connection, call, route, response, startedAt);
    const reply = callReply(call.meta, response);
    span?.end(reply.outcome, response.kind === 'response' ? response.status : undefined);
    if (connection.send(reply.frame)) (reply.outcome === 'ok' ? this.sent.result : this.sent.error).inc();
  }

  /** One debug line per call: ids, method, destination, outcome, duration; never args, kwargs or the answer (SPEC §10). */
  private logCall(
    connection: Connection,
    call: ClientCall,
    route: Route,
    response: UpstreamResponse,
    startedAt: number,
  ): void {
    const outcome = outcomeLabel(response);
    const cause = outcome === 'ok' ? undefined : failureCause(response);
    const durationMs = Math.round((performance.now() - startedAt) * 10) / 10;
    this.logger.debug({
      msg: 'call',
      connection_id: connection.id,
      method: call.method,
      destination: route.destination.name,
      outcome,
      cause,
      duration_ms: durationMs,
    });
  }

  /** SPEC §3: kept for after hello, within a small budget; an oversized frame is refused at once (§4.1). */
  private keepEarly(connection: Connection, data: Buffer, isBinary: boolean): void {
    if (data.length > this.maxFrameBytes) {
      return this.closeWithFatal(
        connection,
        CLOSE_MESSAGE_TOO_BIG,
        REASON_VALIDATION_ERROR,
        `frame of ${data.length} bytes exceeds the limit of ${this.maxFrameBytes} bytes`,
      );
    }
    if (!connection.keepEarlyFrame({ data, isBinary }, this.maxEarlyBytes)) {
      connection.takeEarly();
      this.closeWithFatal(
        connection,
        CLOSE_POLICY_VIOLATION,
        REASON_EARLY_FRAMES_OVER_LIMIT,
        `frames before hello exceed ${this.maxEarlyBytes} bytes`,
      );
    }
  }

  private closeWithFatal(connection: Connection, code: number, reason: string, text: string): void {
    this.counted.fatal.inc();
    this.sent.fatal.inc();
    connection.close(code, reason, encodeFatalError('validation_error', JSON.stringify(text)));
  }

  private onBug(connection: Connection, err: unknown, call: ClientCall | undefined): void {
    this.counted.internal.inc();
    this.logger.error({
      msg: 'frame handler failed',
      connection_id: connection.id,
      error: err instanceof Error ? err.name : 'unknown',
    });
    const meta = call === undefined ? {} : { request_id: call.meta.request_id };
    if (connection.send(encodeError(meta, 'internal_error', 'null'))) this.sent.error.inc();
  }
}
