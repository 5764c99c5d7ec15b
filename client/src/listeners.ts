const always = (): boolean => true;

/** A typed list of callbacks; `add` returns the function that removes the callback again. */
export class Listeners<A extends unknown[]> {
  private readonly list = new Set<(...args: A) => void>();

  add(listener: (...args: A) => void): () => void {
    // Wrapped, so the same function added twice is two registrations with two removers.
    const entry = (...args: A): void => listener(...args);
    this.list.add(entry);
    return () => void this.list.delete(entry);
  }

  get size(): number {
    return this.list.size;
  }

  /**
   * Call every listener. A listener that throws does not stop the others nor
   * the caller's frame handling: its error is rethrown in a microtask, where
   * the platform reports it (like an EventTarget listener's).
   */
  emit(...args: A): void {
    this.emitWhile(always, ...args);
  }

  /** Like `emit`, but stops as soon as `isLive()` turns false (e.g. a listener closed the client). */
  emitWhile(isLive: () => boolean, ...args: A): void {
    for (const listener of [...this.list]) {
      if (!isLive()) return;
      try {
        listener(...args);
      } catch (err) {
        queueMicrotask(() => {
          throw err;
        });
      }
    }
  }
}
