import { Injectable, Logger } from '@nestjs/common';
import type { IncomingMessage } from 'node:http';
import { Counter } from 'prom-client';
import { GatewayMetrics } from '../metrics/gateway-metrics';

/** Why a handshake was refused before the upgrade (SPEC §2, §12.2). */
export type RefusalReason = 'path' | 'subprotocol' | 'origin' | 'limit' | 'resume_rate';

const REASON_BY_STATUS: Readonly<Record<number, RefusalReason>> = {
  404: 'path',
  400: 'subprotocol',
  403: 'origin',
  503: 'limit',
  429: 'resume_rate',
};
/** At most one log line per reason in this interval; the lines left out meanwhile are counted in the next. */
export const REFUSAL_LOG_INTERVAL_MS = 10_000;
/** An Origin header longer than this is cut in the log line (it comes from the client). */
const MAX_LOGGED_ORIGIN = 200;

/**
 * Refused handshakes, visible to operators: a front end on an origin nobody
 * listed otherwise fails without a trace. Each refusal is counted in
 * `gateway_handshakes_refused_total{reason}`; each reason is logged at info
 * at most once per {@link REFUSAL_LOG_INTERVAL_MS}, so a flood of refused
 * handshakes cannot flood the log. The line holds the path and, for an
 * origin refusal, the origin: never the query string, cookies or headers.
 */
@Injectable()
export class HandshakeRefusals {
  private readonly logger = new Logger('PublicListener');
  private readonly counters = new Map<RefusalReason, Counter.Internal>();
  private readonly lastLoggedAt = new Map<RefusalReason, number>();
  private readonly unlogged = new Map<RefusalReason, number>();

  constructor(metrics: GatewayMetrics) {
    for (const reason of Object.values(REASON_BY_STATUS))
      this.counters.set(reason, metrics.handshakesRefused.labels(reason));
  }

  /** Count and maybe log a refusal answered with `status` (404, 400, 403, 503 or 429). */
  record(req: IncomingMessage, status: number): void {
    const reason = REASON_BY_STATUS[status];
    if (reason === undefined) return;
    this.counters.get(reason)!.inc();
    const now = Date.now();
    const last = this.lastLoggedAt.get(reason);
    if (last !== undefined && now - last < REFUSAL_LOG_INTERVAL_MS) {
      this.unlogged.set(reason, (this.unlogged.get(reason) ?? 0) + 1);
      return;
    }
    this.lastLoggedAt.set(reason, now);
    const suppressed = this.unlogged.get(reason) ?? 0;
    this.unlogged.delete(reason);
    const origin = req.headers.origin;
    this.logger.log({
      msg: 'handshake refused',
      reason,
      status,
      path: (req.url ?? '/').split('?')[0],
      ...(reason === 'origin' && origin !== undefined ? { origin: origin.slice(0, MAX_LOGGED_ORIGIN) } : {}),
      ...(suppressed > 0 ? { not_logged_since_last: suppressed } : {}),
    });
  }
}
