import * as fc from 'fast-check';
import { RequestGate } from './request-gate';

describe(RequestGate.name, () => {
  it('runs up to maxSockets, queues up to queueLimit more, then refuses', () => {
    const sut = new RequestGate(2, 3);
    const admitted = Array.from({ length: 6 }, () => sut.tryAdmit());
    expect(admitted).toEqual([true, true, true, true, true, false]);
    expect([sut.running, sut.queued]).toEqual([2, 3]);
  });

  it('refuses everything beyond the sockets when the queue limit is 0', () => {
    const sut = new RequestGate(1, 0);
    expect([sut.tryAdmit(), sut.tryAdmit()]).toEqual([true, false]);
  });

  it('gives a released place to the next request', () => {
    const sut = new RequestGate(1, 1);
    sut.tryAdmit();
    sut.tryAdmit();
    expect(sut.tryAdmit()).toBe(false);
    sut.release();
    expect([sut.running, sut.queued]).toEqual([1, 0]);
    expect(sut.tryAdmit()).toBe(true);
    expect([sut.running, sut.queued]).toEqual([1, 1]);
  });

  it('never admits more than maxSockets + queueLimit, whatever the order of admits and releases', () => {
    fc.assert(
      fc.property(fc.nat(5), fc.nat(5), fc.array(fc.boolean(), { maxLength: 100 }), (maxSockets, queueLimit, steps) => {
        const sut = new RequestGate(maxSockets, queueLimit);
        let admitted = 0;
        for (const admit of steps) {
          if (admit) {
            const ok = sut.tryAdmit();
            expect(ok).toBe(admitted < maxSockets + queueLimit);
            if (ok) admitted++;
          } else if (admitted > 0) {
            sut.release();
            admitted--;
          }
          expect(sut.running + sut.queued).toBe(admitted);
          expect(sut.running).toBeLessThanOrEqual(maxSockets);
        }
      }),
    );
  });
});
