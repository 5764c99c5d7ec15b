import { SilenceProbe } from './silence-probe';

describe(SilenceProbe.name, () => {
  let isUp: boolean;
  let probes: number;
  let reconnects: number;
  let ticks: number;
  let sut: SilenceProbe;

  beforeEach(() => {
    jest.useFakeTimers({ now: 1_000_000 });
    isUp = true;
    probes = 0;
    reconnects = 0;
    ticks = 0;
    sut = new SilenceProbe({
      isUp: () => isUp,
      publishProbe: () => Promise.resolve(++probes),
      reconnect: () => void ++reconnects,
      onTick: () => void ++ticks,
    });
    sut.start(1000, 500);
  });

  afterEach(() => {
    sut.stop();
    jest.useRealTimers();
  });

  it('publishes a probe once the subscriber has heard nothing for the idle time, not before', () => {
    jest.advanceTimersByTime(750);
    expect(probes).toBe(0);
    jest.advanceTimersByTime(250);
    expect(probes).toBe(1);
  });

  it('reconnects the subscriber when the probe is not heard within the timeout, then starts over', () => {
    jest.advanceTimersByTime(1000);
    expect(probes).toBe(1);
    jest.advanceTimersByTime(500);
    expect(reconnects).toBe(1);
    jest.advanceTimersByTime(750);
    expect(probes).toBe(1);
    jest.advanceTimersByTime(250);
    expect(probes).toBe(2);
  });

  it('a message heard answers the probe: no reconnect, and the idle clock restarts', () => {
    jest.advanceTimersByTime(1000);
    sut.heard();
    jest.advanceTimersByTime(750);
    expect(reconnects).toBe(0);
    expect(probes).toBe(1);
    jest.advanceTimersByTime(250);
    expect(probes).toBe(2);
  });

  it('probes nothing while the link is down, and still ticks (the primary check)', () => {
    isUp = false;
    jest.advanceTimersByTime(5000);
    expect(probes).toBe(0);
    expect(reconnects).toBe(0);
    expect(ticks).toBe(20);
  });
});
