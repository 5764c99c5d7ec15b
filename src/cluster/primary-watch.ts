import { Logger } from '@nestjs/common';
import Redis from 'ioredis';
import { Counter } from 'prom-client';
import { RedisTarget } from '../config/redis-url';

/**
 * What a check found: both links on the primary (`ok`, or `unknown` when an
 * address is not known yet), the command connection on a node that is no
 * longer a primary or that did not answer, or the two links on different
 * nodes (one of them on a demoted primary that still calls itself one).
 */
export type PrimaryVerdict = 'ok' | 'unknown' | 'command-not-primary' | 'command-silent' | 'links-apart';

/** The ROLE answer that did not come in time. */
export const ROLE_SILENT = Symbol('role silent');

/**
 * The verdict of one check: `role` is the command connection's ROLE answer
 * ({@link ROLE_SILENT} when it did not come in time), `commandAt` and `subscriberAt`
 * the `ip:port` each connection talks to (null when not connected).
 */
export function primaryVerdict(role: unknown, commandAt: string | null, subscriberAt: string | null): PrimaryVerdict {
  if (role === ROLE_SILENT) return 'command-silent';
  if (!Array.isArray(role) || role[0] !== 'master') return 'command-not-primary';
  if (commandAt === null || subscriberAt === null) return 'unknown';
  return commandAt === subscriberAt ? 'ok' : 'links-apart';
}

/**
 * Which primary the link's two connections talk to, with a Sentinel-managed
 * Redis (SPEC §13.2; direct URLs are left as they were). It counts the
 * primary changes this node sees (`gateway_redis_failovers_total`), logs once
 * per outage why the sentinels gave no primary (unknown master name, no
 * sentinel reachable), and {@link check} makes sure no link stays on a
 * demoted primary (centrifugo#1189: a subscriber kept on the old primary,
 * delivery stopped, health green): the owner calls it within every probe
 * interval and it reconnects what is not on the primary, which then asks the
 * sentinels again.
 */
export class PrimaryWatch {
  private readonly logger = new Logger(PrimaryWatch.name);
  /** `ip:port` of the primary the command connection last became ready on. */
  private primaryAt: string | null = null;
  private isChecking = false;
  private hasWarned = false;
  private lastSentinelProblem: string | null = null;

  constructor(
    private readonly target: RedisTarget,
    private readonly command: Redis,
    private readonly subscriber: Redis,
    private readonly failovers: Counter,
  ) {
    if (target.kind !== 'sentinel') return;
    command.on('ready', () => this.onCommandReady());
    command.on(
      'sentinelError',
      (err: Error) => (this.lastSentinelProblem = sentinelProblem(err.message, target.options.name)),
    );
    command.on('error', (err: Error) => this.onError(err));
  }

  /** One check (skipped while the last one runs): ROLE on the command connection within `timeoutMs`, then both addresses. */
  async check(timeoutMs: number): Promise<void> {
    if (this.target.kind !== 'sentinel' || this.isChecking) return;
    this.isChecking = true;
    try {
      const role = await answerWithin(this.command.role(), timeoutMs);
      if (role === null) return; // the connection dropped: the link's own reconnection follows
      const verdict = primaryVerdict(role, addressOf(this.command), addressOf(this.subscriber));
      if (verdict === 'ok' || verdict === 'unknown') return;
      this.logger.warn({
        msg: 'redis link not on the primary: reconnecting',
        verdict,
        command_at: addressOf(this.command),
        subscriber_at: addressOf(this.subscriber),
      });
      this.command.disconnect(true);
      // Apart, either could be the stale one: both ask the sentinels again.
      if (verdict === 'links-apart') this.subscriber.disconnect(true);
    } finally {
      this.isChecking = false;
    }
  }

  private onCommandReady(): void {
    const at = addressOf(this.command);
    if (at === null) return;
    if (this.primaryAt !== null && at !== this.primaryAt) {
      this.failovers.inc();
      this.logger.warn({ msg: 'redis primary changed', from: this.primaryAt, to: at });
    }
    this.primaryAt = at;
    this.hasWarned = false;
    this.lastSentinelProblem = null;
  }

  /** ioredis reports each failed round over the sentinels as one error; the first of an outage is worth a warning. */
  private onError(err: Error): void {
    if (this.hasWarned || !err.message.startsWith('All sentinels are unreachable') || this.target.kind !== 'sentinel')
      return;
    this.hasWarned = true;
    const reason = this.lastSentinelProblem ?? err.message;
    this.logger.warn({
      msg: 'redis sentinels give no primary: running with Redis down, retrying',
      master_name: this.target.options.name,
      reason,
    });
  }
}

/** ioredis' words for a sentinel that answered "no such master", made plain; other problems as they are. */
function sentinelProblem(message: string, masterName: string): string {
  const noMaster = /sentinel (\S+) successfully, but got an invalid reply: null/.exec(message);
  return noMaster === null ? message : `sentinel ${noMaster[1]} knows no master named ${JSON.stringify(masterName)}`;
}

/** `ip:port` of the node a ready connection talks to; null while it is not ready. */
function addressOf(client: Redis): string | null {
  const stream = client.stream as { remoteAddress?: string; remotePort?: number } | undefined;
  return client.status !== 'ready' || stream?.remoteAddress === undefined
    ? null
    : `${stream.remoteAddress}:${stream.remotePort}`;
}

/** The answer, {@link ROLE_SILENT} when none came within `ms`, null when the command failed. */
async function answerWithin(pending: Promise<unknown>, ms: number): Promise<unknown> {
  let timer: NodeJS.Timeout | undefined;
  const silent = new Promise((resolve) => (timer = setTimeout(() => resolve(ROLE_SILENT), ms)));
  try {
    return await Promise.race([pending.catch(() => null), silent]);
  } finally {
    clearTimeout(timer);
  }
}
