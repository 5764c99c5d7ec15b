/** One deadline: when, and what it is for. */
export interface Deadline<K> {
  readonly atMs: number;
  readonly key: K;
}

/**
 * A min-heap of deadlines (pure), shared by sessions and lattice expiry.
 * Entries are never updated in place: a new deadline for the same thing is
 * pushed again and the owner skips stale entries as they come out (or drops
 * them with `retain`). One timer, armed for `peekAt()`, serves every entry.
 */
export class DeadlineQueue<K> {
  private heap: Array<Deadline<K>> = [];

  get size(): number {
    return this.heap.length;
  }

  push(atMs: number, key: K): void {
    const heap = this.heap;
    heap.push({ atMs, key });
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (heap[parent].atMs <= heap[i].atMs) break;
      [heap[parent], heap[i]] = [heap[i], heap[parent]];
      i = parent;
    }
  }

  /** The earliest deadline without removing it. */
  peek(): Deadline<K> | undefined {
    return this.heap[0];
  }

  /** The earliest deadline time, or null when empty. */
  peekAt(): number | null {
    return this.heap.length === 0 ? null : this.heap[0].atMs;
  }

  /** Remove and return the earliest deadline. */
  pop(): Deadline<K> | undefined {
    const heap = this.heap;
    const top = heap[0];
    const last = heap.pop();
    if (last !== undefined && heap.length > 0) {
      heap[0] = last;
      this.siftDown(0);
    }
    return top;
  }

  /** Remove and return every entry due at `nowMs` or before, earliest first. */
  popDue(nowMs: number): Array<Deadline<K>> {
    const due: Array<Deadline<K>> = [];
    while (this.heap.length > 0 && this.heap[0].atMs <= nowMs) due.push(this.pop()!);
    return due;
  }

  /** Keep only the entries `keep` accepts (drops stale ones in one pass). */
  retain(keep: (deadline: Deadline<K>) => boolean): void {
    this.heap = this.heap.filter(keep);
    for (let i = (this.heap.length >> 1) - 1; i >= 0; i--) this.siftDown(i);
  }

  private siftDown(start: number): void {
    const heap = this.heap;
    let i = start;
    for (;;) {
      const left = 2 * i + 1;
      const right = left + 1;
      let smallest = i;
      if (left < heap.length && heap[left].atMs < heap[smallest].atMs) smallest = left;
      if (right < heap.length && heap[right].atMs < heap[smallest].atMs) smallest = right;
      if (smallest === i) return;
      [heap[smallest], heap[i]] = [heap[i], heap[smallest]];
      i = smallest;
    }
  }
}
