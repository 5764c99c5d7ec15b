/** Calls waiting for their reply: queued (no connection yet) or sent. Every one of them settles. */
import { callError, type CallErrorInfo } from './call-error';
import type { FatalError } from './fatal-error';
import { encodeCall } from './frames';

/** Per-call options. */
export interface CallOptions {
  /** Reject with `timeout` after this many ms, time spent waiting for a connection included; Infinity: never. */
  readonly timeoutMs?: number;
  /** Reject with `aborted` when it fires (the reply, if one comes, is dropped). */
  readonly signal?: AbortSignal;
  /** Seconds of user activity this call stands for (SPEC §8 `active`): keeps the session active. */
  readonly active?: number;
}

/** A call the client holds. */
export interface PendingCall {
  readonly requestId: number;
  readonly method: string;
  /** The encoded frame, ready to send. */
  readonly frame: string;
  isSent: boolean;
}

interface Entry extends PendingCall {
  resolve(value: unknown): void;
  fail(info: CallErrorInfo): void;
}

/** setTimeout's largest delay; longer timeouts would fire at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * The calls of one client, by request id (numbers from 1, never reused).
 * Each settles exactly once: its reply, its timeout, its abort signal, or a
 * lost connection; a reply that comes after that is dropped.
 */
export class PendingCalls {
  private nextRequestId = 1;
  private readonly entries = new Map<number, Entry>();

  get size(): number {
    return this.entries.size;
  }

  /** Register a call; it stays queued until {@link takeQueued}. */
  add<R>(
    method: string,
    args: readonly unknown[],
    kwargs: Readonly<Record<string, unknown>>,
    options: CallOptions,
    defaultTimeoutMs: number,
  ): { call: PendingCall | null; promise: Promise<R> } {
    const { signal } = options;
    if (signal?.aborted === true)
      return { call: null, promise: Promise.reject(callError(method, { kind: 'aborted', reason: signal.reason })) };
    const requestId = this.nextRequestId++;
    const timeoutMs = options.timeoutMs ?? defaultTimeoutMs;
    let entry!: Entry;
    const promise = new Promise<R>((resolve, reject) => {
      let timer: ReturnType<typeof setTimeout> | null = null;
      const onAbort = (): void => entry.fail({ kind: 'aborted', reason: signal?.reason });
      const done = (): boolean => {
        if (!this.entries.delete(requestId)) return false;
        if (timer !== null) clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        return true;
      };
      entry = {
        requestId,
        method,
        frame: encodeCall(method, requestId, args, kwargs, options.active),
        isSent: false,
        resolve: (value) => done() && resolve(value as R),
        fail: (info) => done() && reject(callError(method, info)),
      };
      this.entries.set(requestId, entry);
      if (Number.isFinite(timeoutMs))
        timer = setTimeout(
          () => entry.fail({ kind: 'timeout', timeoutMs }),
          Math.min(Math.max(0, timeoutMs), MAX_TIMER_MS),
        );
      signal?.addEventListener('abort', onAbort, { once: true });
    });
    return { call: entry, promise };
  }

  /** The calls not sent yet, in the order they were made; they are marked sent. */
  takeQueued(): PendingCall[] {
    const queued = [...this.entries.values()].filter((entry) => !entry.isSent);
    for (const entry of queued) entry.isSent = true;
    return queued;
  }

  /** A `result` frame arrived; replies to unknown ids (timed out, aborted) are dropped. */
  resolve(requestId: number, data: unknown): void {
    this.entries.get(requestId)?.resolve(data);
  }

  /** An `error` frame arrived for this id. */
  reject(requestId: number, info: CallErrorInfo): void {
    this.entries.get(requestId)?.fail(info);
  }

  /** The connection closed: every sent call fails with `connection_lost`; queued ones keep waiting. */
  loseSent(fatal: FatalError | null): void {
    for (const entry of [...this.entries.values()])
      if (entry.isSent) entry.fail({ kind: 'connection_lost', sent: true, fatal });
  }

  /** The client stopped: every call fails with `connection_lost`. */
  loseAll(fatal: FatalError | null): void {
    for (const entry of [...this.entries.values()]) entry.fail({ kind: 'connection_lost', sent: entry.isSent, fatal });
  }
}
