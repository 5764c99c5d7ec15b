/**
 * A min-heap of `(atMs, key)` deadlines (pure). Entries are never updated in
 * place: a later deadline for the same key is pushed again and the owner
 * skips stale entries when they come out. One timer, armed for `peekAt()`,
 * serves every entry.
 */
export class DeadlineQueue<K> {
  private readonly heap: Array<{ readonly atMs: number; readonly key: K }> = [];

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

  /** The earliest deadline, or null when empty. */
  peekAt(): number | null {
    return this.heap.length === 0 ? null : this.heap[0].atMs;
  }

  /** Remove and return every entry due at `nowMs` or before, earliest first. */
  popDue(nowMs: number): Array<{ atMs: number; key: K }> {
    const due: Array<{ atMs: number; key: K }> = [];
    while (this.heap.length > 0 && this.heap[0].atMs <= nowMs) due.push(this.pop());
    return due;
  }

  private pop(): { atMs: number; key: K } {
    const heap = this.heap;
    const top = heap[0];
    const last = heap.pop()!;
    if (heap.length > 0) {
      heap[0] = last;
      this.siftDown();
    }
    return top;
  }

  private siftDown(): void {
    const heap = this.heap;
    let i = 0;
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
