/**
 * Admission for one destination (SPEC §1): `maxSockets` requests run and up to
 * `queueLimit` more wait for a socket; beyond that a request is refused at
 * once. It only counts: the waiting itself happens in the destination's
 * http.Agent, whose FIFO queue hands a freed socket straight to the next
 * request (cheaper than parking the socket and taking it back). Each request's
 * own timer covers its time in that queue. Plain TS, no I/O.
 */
export class RequestGate {
  private admitted = 0;

  constructor(
    private readonly maxSockets: number,
    private readonly queueLimit: number,
  ) {}

  /** Admit a request (true) or refuse it because the queue is full (false). */
  tryAdmit(): boolean {
    if (this.admitted >= this.maxSockets + this.queueLimit) return false;
    this.admitted++;
    return true;
  }

  /** An admitted request is done (answered, failed or timed out). */
  release(): void {
    this.admitted--;
  }

  /** Requests holding a socket now. */
  get running(): number {
    return Math.min(this.admitted, this.maxSockets);
  }

  /** Requests waiting for a socket. */
  get queued(): number {
    return Math.max(0, this.admitted - this.maxSockets);
  }
}
