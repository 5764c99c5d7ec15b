import * as fc from 'fast-check';
import { CALL_LANE, FIRST_LANE, Lane, RequestGate, WaitingRequest } from './request-gate';

/** Admit a request the way UpstreamClient does: run, else wait in its lane, else refused. */
function admit(sut: RequestGate, lane: Lane): 'run' | WaitingRequest | 'refused' {
  if (sut.tryRun(lane)) return 'run';
  const waiting = new WaitingRequest(lane);
  return sut.enqueue(waiting) ? waiting : 'refused';
}

describe(RequestGate.name, () => {
  it.each([
    [1, 1],
    [2, 1],
    [9, 8],
    [10, 9],
    [11, 9],
    [100, 90],
    [101, 90],
  ])(
    'with %d sockets lets calls hold at most %d (the last tenth, at least one, stays for the first lane)',
    (maxSockets, maxCalls) => {
      expect(new RequestGate(maxSockets, 0).maxRunningCalls).toBe(maxCalls);
    },
  );

  it('runs calls up to their share, queues up to queueLimit more in their lane, then refuses', () => {
    const sut = new RequestGate(2, 3);
    const outcomes = Array.from({ length: 5 }, () => admit(sut, CALL_LANE)).map((o) =>
      o instanceof WaitingRequest ? 'wait' : o,
    );
    expect(outcomes).toEqual(['run', 'wait', 'wait', 'wait', 'refused']);
    expect([sut.running, sut.queued]).toEqual([1, 3]);
  });

  it('runs an authorization at once on the socket calls may not hold, with the call lane full', () => {
    const sut = new RequestGate(2, 1);
    admit(sut, CALL_LANE);
    admit(sut, CALL_LANE);
    expect(admit(sut, CALL_LANE)).toBe('refused');
    expect(admit(sut, FIRST_LANE)).toBe('run');
    expect(admit(sut, FIRST_LANE)).toBeInstanceOf(WaitingRequest);
    expect([sut.running, sut.queued]).toEqual([2, 2]);
  });

  it('gives a freed socket to the first lane before any waiting call', () => {
    const sut = new RequestGate(2, 5);
    admit(sut, FIRST_LANE);
    admit(sut, CALL_LANE);
    const call = admit(sut, CALL_LANE);
    const auth = admit(sut, FIRST_LANE);
    expect(sut.release(CALL_LANE)).toBe(auth);
    expect(sut.release(FIRST_LANE)).toBe(call);
    expect(sut.release(FIRST_LANE)).toBeNull();
    expect([sut.running, sut.queued]).toEqual([1, 0]);
  });

  it('keeps a waiting call waiting when a first-lane socket frees but calls hold their share', () => {
    const sut = new RequestGate(2, 5);
    admit(sut, CALL_LANE);
    admit(sut, FIRST_LANE);
    const call = admit(sut, CALL_LANE);
    expect(sut.release(FIRST_LANE)).toBeNull();
    expect(sut.release(CALL_LANE)).toBe(call);
  });

  it('forgets a cancelled request: its place in the lane comes back', () => {
    const sut = new RequestGate(1, 2);
    admit(sut, CALL_LANE);
    const first = admit(sut, CALL_LANE) as WaitingRequest;
    const second = admit(sut, CALL_LANE) as WaitingRequest;
    expect(admit(sut, CALL_LANE)).toBe('refused');
    sut.cancel(first);
    sut.cancel(first);
    expect(sut.queued).toBe(1);
    const third = admit(sut, CALL_LANE);
    expect(sut.release(CALL_LANE)).toBe(second);
    expect(sut.release(CALL_LANE)).toBe(third);
  });

  it('refuses everything beyond the sockets when the queue limit is 0', () => {
    const sut = new RequestGate(1, 0);
    expect([admit(sut, FIRST_LANE), admit(sut, FIRST_LANE), admit(sut, CALL_LANE)]).toEqual([
      'run',
      'refused',
      'refused',
    ]);
  });

  it('never exceeds its sockets, the calls share or a lane limit, and never leaves a socket idle while someone may take it', () => {
    const step = fc.oneof(
      fc.record({ op: fc.constant('admit' as const), lane: fc.constantFrom<Lane>(FIRST_LANE, CALL_LANE) }),
      fc.record({ op: fc.constant('release' as const), index: fc.nat() }),
      fc.record({ op: fc.constant('cancel' as const), index: fc.nat() }),
    );
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 12 }),
        fc.nat(4),
        fc.array(step, { maxLength: 150 }),
        (maxSockets, queueLimit, steps) => {
          const sut = new RequestGate(maxSockets, queueLimit);
          const running: Lane[] = [];
          const waiting: WaitingRequest[] = [];
          for (const s of steps) {
            if (s.op === 'admit') {
              const outcome = admit(sut, s.lane);
              if (outcome === 'run') running.push(s.lane);
              else if (outcome !== 'refused') waiting.push(outcome);
              else expect(waiting.filter((w) => w.lane === s.lane)).toHaveLength(queueLimit);
            } else if (s.op === 'release' && running.length > 0) {
              const [lane] = running.splice(s.index % running.length, 1);
              const next = sut.release(lane);
              if (next !== null) {
                waiting.splice(waiting.indexOf(next), 1);
                running.push(next.lane);
              }
            } else if (s.op === 'cancel' && waiting.length > 0) {
              sut.cancel(waiting.splice(s.index % waiting.length, 1)[0]);
            }
            const calls = running.filter((lane) => lane === CALL_LANE).length;
            expect([sut.running, sut.queued]).toEqual([running.length, waiting.length]);
            expect(running.length).toBeLessThanOrEqual(maxSockets);
            expect(calls).toBeLessThanOrEqual(sut.maxRunningCalls);
            const isSocketFree = running.length < maxSockets;
            if (isSocketFree) expect(waiting.filter((w) => w.lane === FIRST_LANE)).toEqual([]);
            if (isSocketFree && calls < sut.maxRunningCalls) expect(waiting).toEqual([]);
          }
        },
      ),
    );
  });
});
