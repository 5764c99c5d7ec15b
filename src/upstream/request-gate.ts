/**
 * Admission for one destination (SPEC §1): at most `maxInFlight` requests run;
 * up to `queueLimit` wait in FIFO order; beyond that a caller is refused at
 * once. A waiter gives up when its wait time runs out. Every waiter of one
 * gate waits at most the destination's timeout, so deadlines grow in queue
 * order and one timer, armed for the oldest waiter, serves the whole queue.
 * Plain TS, no I/O.
 */
export class RequestGate {
  private inFlight = 0;
  private readonly waiting: Waiter[] = [];
  private head = 0;
  private waitingCount = 0;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly maxInFlight: number,
    private readonly queueLimit: number,
  ) {}

  /** Take a slot now if one is free (the fast path: no promise, no timer). */
  tryAcquire(): boolean {
    if (this.inFlight >= this.maxInFlight) return false;
    this.inFlight++;
    return true;
  }

  /** True when a caller that cannot start now would be refused. */
  get isQueueFull(): boolean {
    return this.waitingCount >= this.queueLimit;
  }

  /**
   * `true` (at once) when the caller may start; `false` when the queue is full;
   * otherwise a promise of `true` when a slot is handed over, or `false` when
   * `waitMs` passes first.
   */
  acquire(waitMs: number): Promise<boolean> | boolean {
    if (this.tryAcquire()) return true;
    if (this.isQueueFull || waitMs <= 0) return false;
    return new Promise<boolean>((resolve) => {
      this.waiting.push({ resolve, deadlineAt: Date.now() + waitMs, isDone: false });
      this.waitingCount++;
      if (this.timer === null) this.arm();
    });
  }

  /** Give back a slot taken by a successful acquire; hands it to the next waiter. */
  release(): void {
    const next = this.nextWaiter();
    if (next === undefined) {
      this.inFlight--;
      return;
    }
    next.isDone = true;
    this.waitingCount--;
    next.resolve(true);
  }

  /** Requests running now. */
  get running(): number {
    return this.inFlight;
  }

  /** Requests waiting for a slot. */
  get queued(): number {
    return this.waitingCount;
  }

  private nextWaiter(): Waiter | undefined {
    while (this.head < this.waiting.length) {
      const waiter = this.waiting[this.head++];
      if (!waiter.isDone) {
        this.compact();
        return waiter;
      }
    }
    this.compact();
    return undefined;
  }

  /** Arm the one timer for the oldest live waiter. */
  private arm(): void {
    let at = this.head;
    while (at < this.waiting.length && this.waiting[at].isDone) at++;
    const oldest = this.waiting[at];
    if (oldest === undefined) return;
    this.timer = setTimeout(() => this.expire(), Math.max(0, oldest.deadlineAt - Date.now()));
    this.timer.unref();
  }

  private expire(): void {
    this.timer = null;
    const now = Date.now();
    for (let i = this.head; i < this.waiting.length; i++) {
      const waiter = this.waiting[i];
      if (waiter.isDone) continue;
      if (waiter.deadlineAt > now) break;
      waiter.isDone = true;
      this.waitingCount--;
      waiter.resolve(false);
    }
    if (this.waitingCount > 0) this.arm();
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
  readonly deadlineAt: number;
  readonly resolve: (admitted: boolean) => void;
}
