import { RequestGate } from './request-gate';

/** Long enough never to run out in a test that does not move the clock. */
const LONG_MS = 60_000;

/** Let the `.then` callbacks of resolved promises run. */
const flushPromiseCallbacks = () => new Promise<void>((resolve) => setImmediate(resolve));

describe(RequestGate.name, () => {
  let sut: RequestGate;

  beforeEach(() => {
    sut = new RequestGate(2, 3);
  });

  it('admits up to maxInFlight at once, synchronously', () => {
    expect([sut.acquire(LONG_MS), sut.acquire(LONG_MS)]).toEqual([true, true]);
    expect([sut.running, sut.queued]).toEqual([2, 0]);
  });

  it('queues a request beyond maxInFlight', () => {
    sut.acquire(LONG_MS);
    sut.acquire(LONG_MS);
    expect(sut.acquire(LONG_MS)).toBeInstanceOf(Promise);
    expect([sut.running, sut.queued]).toEqual([2, 1]);
  });

  it('refuses at once when queueLimit requests already wait', () => {
    for (let i = 0; i < 5; i++) sut.acquire(LONG_MS);
    expect(sut.acquire(LONG_MS)).toBe(false);
    expect([sut.running, sut.queued]).toEqual([2, 3]);
  });

  it('refuses every waiter when the queue limit is 0', () => {
    sut = new RequestGate(1, 0);
    expect([sut.acquire(LONG_MS), sut.acquire(LONG_MS)]).toEqual([true, false]);
  });

  it('hands a released slot to the first waiter without lowering running', async () => {
    sut.acquire(LONG_MS);
    sut.acquire(LONG_MS);
    const waiter = sut.acquire(LONG_MS);
    sut.release();
    await expect(waiter).resolves.toBe(true);
    expect([sut.running, sut.queued]).toEqual([2, 0]);
  });

  it('admits waiters in FIFO order', async () => {
    sut = new RequestGate(1, 10);
    sut.acquire(LONG_MS);
    const order: number[] = [];
    for (let i = 0; i < 5; i++) void (sut.acquire(LONG_MS) as Promise<boolean>).then(() => order.push(i));
    for (let i = 0; i < 5; i++) {
      sut.release();
      await flushPromiseCallbacks();
      expect(order).toEqual([...Array(i + 1).keys()]);
    }
  });

  it('frees the slot when released with nobody waiting', () => {
    sut.acquire(LONG_MS);
    sut.release();
    expect([sut.running, sut.queued]).toEqual([0, 0]);
    expect(sut.acquire(LONG_MS)).toBe(true);
  });

  describe('with a waiting time', () => {
    beforeEach(() => jest.useFakeTimers());
    afterEach(() => jest.useRealTimers());

    it('resolves a waiter false when its time runs out and drops it from the queue', async () => {
      sut.acquire(LONG_MS);
      sut.acquire(LONG_MS);
      const waiter = sut.acquire(100);
      jest.advanceTimersByTime(100);
      await expect(waiter).resolves.toBe(false);
      expect([sut.running, sut.queued]).toEqual([2, 0]);
    });

    it('expires waiters in deadline order with one timer', async () => {
      sut = new RequestGate(1, 10);
      sut.acquire(LONG_MS);
      const first = sut.acquire(100);
      const second = sut.acquire(200);
      jest.advanceTimersByTime(100);
      await expect(first).resolves.toBe(false);
      expect(sut.queued).toBe(1);
      expect(jest.getTimerCount()).toBe(1);
      jest.advanceTimersByTime(100);
      await expect(second).resolves.toBe(false);
      expect(jest.getTimerCount()).toBe(0);
    });

    it('skips an expired waiter when handing over a slot', async () => {
      sut.acquire(LONG_MS);
      sut.acquire(LONG_MS);
      const expired = sut.acquire(100);
      jest.advanceTimersByTime(100);
      const next = sut.acquire(LONG_MS);
      sut.release();
      await expect(Promise.all([expired, next])).resolves.toEqual([false, true]);
      expect([sut.running, sut.queued]).toEqual([2, 0]);
    });

    it('gives the place of an expired waiter to a new request', () => {
      sut.acquire(LONG_MS);
      sut.acquire(LONG_MS);
      sut.acquire(100);
      sut.acquire(LONG_MS);
      sut.acquire(LONG_MS);
      jest.advanceTimersByTime(100);
      expect(sut.acquire(LONG_MS)).toBeInstanceOf(Promise);
      expect(sut.queued).toBe(3);
    });

    it('refuses a waiter with no time left', () => {
      sut.acquire(LONG_MS);
      sut.acquire(LONG_MS);
      expect(sut.acquire(0)).toBe(false);
      expect(sut.queued).toBe(0);
    });

    it('keeps an admitted waiter admitted when its time later runs out', async () => {
      sut.acquire(LONG_MS);
      sut.acquire(LONG_MS);
      const waiter = sut.acquire(100);
      sut.release();
      jest.advanceTimersByTime(100);
      await expect(waiter).resolves.toBe(true);
      expect([sut.running, sut.queued]).toEqual([2, 0]);
    });
  });

  it('drains to zero when every admitted request releases', async () => {
    const admitted = [sut.acquire(LONG_MS), sut.acquire(LONG_MS), sut.acquire(LONG_MS), sut.acquire(LONG_MS)];
    for (let i = 0; i < admitted.length; i++) sut.release();
    await expect(Promise.all(admitted)).resolves.toEqual([true, true, true, true]);
    expect([sut.running, sut.queued]).toEqual([0, 0]);
  });

  it('keeps FIFO order over thousands of waiters with expiries among them', async () => {
    jest.useFakeTimers();
    sut = new RequestGate(1, 5000);
    sut.acquire(LONG_MS);
    const admitted: number[] = [];
    const expected: number[] = [];
    for (let i = 0; i < 3000; i++) {
      // Deadlines grow in queue order (one destination timeout): the first thousand run out.
      const waitMs = i < 1000 ? 1 : LONG_MS;
      void (sut.acquire(waitMs) as Promise<boolean>).then((ok) => ok && admitted.push(i));
      if (i >= 1000) expected.push(i);
    }
    jest.advanceTimersByTime(1);
    jest.useRealTimers();
    expect(sut.queued).toBe(2000);
    for (let i = 0; i < 1500; i++) sut.release();
    await flushPromiseCallbacks();
    expect(admitted).toEqual(expected.slice(0, 1500));
    for (let i = 0; i < 500; i++) sut.release();
    await flushPromiseCallbacks();
    expect(admitted).toEqual(expected);
    expect([sut.running, sut.queued]).toEqual([1, 0]);
  });
});
