/** Bounded, event-based waiting with a clear failure message (STYLE B10). */

/**
 * Re-run `check` (sync or async) until it returns a value other than
 * undefined or false, pausing `pauseMs` between tries; resolve that value.
 * Reject after `ms` with `what`, read at the failure when it is a function
 * (so it can name the last state seen).
 */
export async function waitFor<T>(
  check: () => T | undefined | false | Promise<T | undefined | false>,
  what: string | (() => string),
  ms = 2000,
  pauseMs = 5,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline)
      throw new Error(`timed out after ${ms} ms waiting for ${typeof what === 'string' ? what : what()}`);
    await new Promise((resolve) => setTimeout(resolve, pauseMs));
  }
}

/** Race a promise against a bounded timeout that names what was awaited. */
export function within<T>(promise: Promise<T>, what: string, ms = 2000): Promise<T> {
  let timer: NodeJS.Timeout;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** A promise with its resolve function, e.g. to hold an upstream reply until the test releases it. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}
