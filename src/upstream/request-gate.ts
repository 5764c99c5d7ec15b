/**
 * Admission for one destination (SPEC §1): at most `maxInFlight` requests run;
 * up to `queueLimit` wait in FIFO order; beyond that `acquire` refuses at once.
 * Plain TS, no I/O.
 */
export class RequestGate {
  private inFlight = 0;
  private readonly waiting: Waiter[] = [];
  private head = 0;
  private waitingCount = 0;

  constructor(
    private readonly maxInFlight: number,
    private readonly queueLimit: number,
  ) {}

  /**
   * Resolves `true` when the caller may start, `false` when the queue is full.
   * A waiter whose `signal` aborts first is dropped and resolves `false`.
   */
  acquire(signal: AbortSignal): Promise<boolean> | boolean {
    if (this.inFlight < this.maxInFlight) {
      this.inFlight++;
      return true;
    }
    if (this.waitingCount >= this.queueLimit) return false;
    // An already-aborted signal never fires 'abort': such a waiter would never be dropped.
    if (signal.aborted) return false;
    return new Promise<boolean>((resolve) => {
      const waiter: Waiter = { resolve, signal, isDone: false, onAbort: () => this.abandon(waiter) };
      this.waiting.push(waiter);
      this.waitingCount++;
      signal.addEventListener('abort', waiter.onAbort, { once: true });
    });
  }

  /** Give back a slot taken by a successful `acquire`; hands it to the next waiter. */
  release(): void {
    while (this.head < this.waiting.length) {
      const next = this.waiting[this.head++];
      if (next.isDone) continue;
      next.isDone = true;
      this.waitingCount--;
      next.signal.removeEventListener('abort', next.onAbort);
      this.compact();
      next.resolve(true);
      return;
    }
    this.compact();
    this.inFlight--;
  }

  /** Requests running now. */
  get running(): number {
    return this.inFlight;
  }

  /** Requests waiting for a slot. */
  get queued(): number {
    return this.waitingCount;
  }

  private abandon(waiter: Waiter): void {
    if (waiter.isDone) return;
    waiter.isDone = true;
    this.waitingCount--;
    waiter.resolve(false);
  }

  private compact(): void {
    if (this.head === this.waiting.length) {
      this.waiting.length = 0;
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.waiting.length) {
      this.waiting.splice(0, this.head);
      this.head = 0;
    }
  }
}

interface Waiter {
  isDone: boolean;
  readonly resolve: (admitted: boolean) => void;
  readonly signal: AbortSignal;
  readonly onAbort: () => void;
}
