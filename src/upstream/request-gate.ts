/** SPEC §1: authorization requests and inactivity notices. */
export const FIRST_LANE = 0;
/** SPEC §1: client calls. */
export const CALL_LANE = 1;
export type Lane = typeof FIRST_LANE | typeof CALL_LANE;

/** A request waiting for a socket: the gate links it into its lane's list. */
export class WaitingRequest {
  /** Set by the gate while the request waits. */
  prev: WaitingRequest | null = null;
  next: WaitingRequest | null = null;
  isWaiting = false;

  constructor(readonly lane: Lane) {}
}

/** One lane's waiting requests, oldest first (an intrusive list: O(1) append, take and cancel). */
class LaneQueue {
  head: WaitingRequest | null = null;
  tail: WaitingRequest | null = null;
  length = 0;

  push(request: WaitingRequest): void {
    request.prev = this.tail;
    request.next = null;
    if (this.tail === null) this.head = request;
    else this.tail.next = request;
    this.tail = request;
    request.isWaiting = true;
    this.length++;
  }

  remove(request: WaitingRequest): void {
    if (request.prev === null) this.head = request.next;
    else request.prev.next = request.next;
    if (request.next === null) this.tail = request.prev;
    else request.next.prev = request.prev;
    request.prev = request.next = null;
    request.isWaiting = false;
    this.length--;
  }
}

/**
 * Admission for one destination (SPEC §1): `maxSockets` requests run; more
 * wait in two lanes, each bounded by `queueLimit` (beyond it a request is
 * refused at once). A freed socket takes from the first lane first, and calls
 * never hold the last tenth of the sockets (at least one, when there are two
 * or more), so no flood of calls delays an authorization, queued or in flight.
 * The gate hands a request a socket only when one is free, so the destination's
 * http.Agent never queues behind it. Plain TS, no I/O.
 */
export class RequestGate {
  /** Requests holding a socket, and how many of them are calls. */
  private socketsHeld = 0;
  private socketsHeldByCalls = 0;
  /** Most sockets calls may hold at once. */
  readonly maxRunningCalls: number;
  private readonly lanes: readonly [LaneQueue, LaneQueue] = [new LaneQueue(), new LaneQueue()];

  constructor(
    private readonly maxSockets: number,
    private readonly queueLimit: number,
  ) {
    // With a single socket nothing can be kept back: calls would never run.
    const reserved = maxSockets < 2 ? 0 : Math.max(1, Math.ceil(maxSockets / 10));
    this.maxRunningCalls = maxSockets - reserved;
  }

  /** Take a socket now (true), or not (false: the request must wait, or is refused). */
  tryRun(lane: Lane): boolean {
    if (this.socketsHeld >= this.maxSockets) return false;
    if (lane === CALL_LANE) {
      // Calls also wait behind queued calls (FIFO within the lane).
      if (this.socketsHeldByCalls >= this.maxRunningCalls || this.lanes[CALL_LANE].length > 0) return false;
      this.socketsHeldByCalls++;
    } else if (this.lanes[FIRST_LANE].length > 0) return false;
    this.socketsHeld++;
    return true;
  }

  /** Whether `lane` holds `queueLimit` waiting requests: a request that cannot run now is refused. */
  isFull(lane: Lane): boolean {
    return this.lanes[lane].length >= this.queueLimit;
  }

  /** Queue a request that could not run; false (nothing queued) when its lane is full. */
  enqueue(request: WaitingRequest): boolean {
    if (this.isFull(request.lane)) return false;
    this.lanes[request.lane].push(request);
    return true;
  }

  /** A waiting request gave up (its timeout): it leaves its lane. */
  cancel(request: WaitingRequest): void {
    if (request.isWaiting) this.lanes[request.lane].remove(request);
  }

  /**
   * A running request of `lane` is done (answered, failed or timed out).
   * Returns the waiting request that now holds its socket, if any: the caller starts it.
   */
  release(lane: Lane): WaitingRequest | null {
    this.socketsHeld--;
    if (lane === CALL_LANE) this.socketsHeldByCalls--;
    return this.next();
  }

  /** Requests holding a socket now. */
  get running(): number {
    return this.socketsHeld;
  }

  /** Requests waiting for a socket, both lanes. */
  get queued(): number {
    return this.lanes[FIRST_LANE].length + this.lanes[CALL_LANE].length;
  }

  private next(): WaitingRequest | null {
    const first = this.lanes[FIRST_LANE].head;
    if (first !== null) {
      this.lanes[FIRST_LANE].remove(first);
      this.socketsHeld++;
      return first;
    }
    const call = this.lanes[CALL_LANE].head;
    if (call === null || this.socketsHeldByCalls >= this.maxRunningCalls) return null;
    this.lanes[CALL_LANE].remove(call);
    this.socketsHeld++;
    this.socketsHeldByCalls++;
    return call;
  }
}
