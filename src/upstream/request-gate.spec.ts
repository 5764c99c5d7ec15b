import { RequestGate } from './request-gate';

const signal = () => new AbortController().signal;

/** Let the `.then` callbacks of resolved promises run. */
const flushPromiseCallbacks = () => new Promise<void>((resolve) => setImmediate(resolve));

describe(RequestGate.name, () => {
  let sut: RequestGate;

  beforeEach(() => {
    sut = new RequestGate(2, 3);
  });

  it('admits up to maxInFlight at once, synchronously', () => {
    expect([sut.acquire(signal()), sut.acquire(signal())]).toEqual([true, true]);
    expect([sut.running, sut.queued]).toEqual([2, 0]);
  });

  it('queues a request beyond maxInFlight', () => {
    sut.acquire(signal());
    sut.acquire(signal());
    expect(sut.acquire(signal())).toBeInstanceOf(Promise);
    expect([sut.running, sut.queued]).toEqual([2, 1]);
  });

  it('refuses at once when queueLimit requests already wait', () => {
    for (let i = 0; i < 5; i++) sut.acquire(signal());
    expect(sut.acquire(signal())).toBe(false);
    expect([sut.running, sut.queued]).toEqual([2, 3]);
  });

  it('refuses every waiter when the queue limit is 0', () => {
    sut = new RequestGate(1, 0);
    expect([sut.acquire(signal()), sut.acquire(signal())]).toEqual([true, false]);
  });

  it('hands a released slot to the first waiter without lowering running', async () => {
    sut.acquire(signal());
    sut.acquire(signal());
    const waiter = sut.acquire(signal());
    sut.release();
    await expect(waiter).resolves.toBe(true);
    expect([sut.running, sut.queued]).toEqual([2, 0]);
  });

  it('admits waiters in FIFO order', async () => {
    sut = new RequestGate(1, 10);
    sut.acquire(signal());
    const order: number[] = [];
    for (let i = 0; i < 5; i++) void (sut.acquire(signal()) as Promise<boolean>).then(() => order.push(i));
    for (let i = 0; i < 5; i++) {
      sut.release();
      await flushPromiseCallbacks();
      expect(order).toEqual([...Array(i + 1).keys()]);
    }
  });

  it('frees the slot when released with nobody waiting', () => {
    sut.acquire(signal());
    sut.release();
    expect([sut.running, sut.queued]).toEqual([0, 0]);
    expect(sut.acquire(signal())).toBe(true);
  });

  it('resolves an aborted waiter false and drops it from the queue', async () => {
    sut.acquire(signal());
    sut.acquire(signal());
    const controller = new AbortController();
    const waiter = sut.acquire(controller.signal);
    controller.abort();
    await expect(waiter).resolves.toBe(false);
    expect([sut.running, sut.queued]).toEqual([2, 0]);
  });

  it('skips an aborted waiter when handing over a slot', async () => {
    sut.acquire(signal());
    sut.acquire(signal());
    const controller = new AbortController();
    const aborted = sut.acquire(controller.signal);
    const next = sut.acquire(signal());
    controller.abort();
    sut.release();
    await expect(Promise.all([aborted, next])).resolves.toEqual([false, true]);
    expect([sut.running, sut.queued]).toEqual([2, 0]);
  });

  it('gives the place of an aborted waiter to a new request', () => {
    sut.acquire(signal());
    sut.acquire(signal());
    const controller = new AbortController();
    sut.acquire(controller.signal);
    sut.acquire(signal());
    sut.acquire(signal());
    controller.abort();
    expect(sut.acquire(signal())).toBeInstanceOf(Promise);
    expect(sut.queued).toBe(3);
  });

  it('refuses a waiter whose signal is already aborted', () => {
    sut.acquire(signal());
    sut.acquire(signal());
    expect(sut.acquire(AbortSignal.abort())).toBe(false);
    expect(sut.queued).toBe(0);
  });

  it('ignores an abort after the waiter was admitted', async () => {
    sut.acquire(signal());
    sut.acquire(signal());
    const controller = new AbortController();
    const waiter = sut.acquire(controller.signal);
    sut.release();
    controller.abort();
    await expect(waiter).resolves.toBe(true);
    expect([sut.running, sut.queued]).toEqual([2, 0]);
  });

  it('drains to zero when every admitted request releases', async () => {
    const admitted = [sut.acquire(signal()), sut.acquire(signal()), sut.acquire(signal()), sut.acquire(signal())];
    for (let i = 0; i < admitted.length; i++) sut.release();
    await expect(Promise.all(admitted)).resolves.toEqual([true, true, true, true]);
    expect([sut.running, sut.queued]).toEqual([0, 0]);
  });

  it('keeps FIFO order over thousands of waiters with aborts among them', async () => {
    sut = new RequestGate(1, 5000);
    sut.acquire(signal());
    const admitted: number[] = [];
    const expected: number[] = [];
    for (let i = 0; i < 3000; i++) {
      const controller = new AbortController();
      void (sut.acquire(controller.signal) as Promise<boolean>).then((ok) => ok && admitted.push(i));
      if (i % 3 === 0) controller.abort();
      else expected.push(i);
    }
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
