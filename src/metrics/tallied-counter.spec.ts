import { Registry } from 'prom-client';
import { TalliedCounter } from './tallied-counter';

describe(TalliedCounter.name, () => {
  let registry: Registry;
  let sut: TalliedCounter<'kind' | 'outcome'>;
  beforeEach(() => {
    registry = new Registry();
    sut = new TalliedCounter({ name: 't_total', help: 'h', labelNames: ['kind', 'outcome'], registers: [registry] });
  });

  it("counts a bound child's increments and shows them on every registry read, without counting twice", async () => {
    const ok = sut.labels('call', 'ok');
    ok.inc();
    ok.inc(2);
    sut.labels('call', 'timeout').inc();
    expect(await registry.metrics()).toContain('t_total{kind="call",outcome="ok"} 3');
    ok.inc();
    const text = await registry.metrics();
    expect(text).toContain('t_total{kind="call",outcome="ok"} 4');
    expect(text).toContain('t_total{kind="call",outcome="timeout"} 1');
    expect((await sut.get()).values.find((v) => v.labels.outcome === 'ok')?.value).toBe(4);
  });

  it('hands out one child per label set', () => {
    expect(sut.labels('call', 'ok')).toBe(sut.labels('call', 'ok'));
    expect(sut.labels('call', 'ok')).not.toBe(sut.labels('auth', 'ok'));
  });

  it("keeps prom-client's object form and unbound increments", async () => {
    sut.labels({ kind: 'auth', outcome: 'ok' }).inc();
    sut.inc({ kind: 'auth', outcome: 'ok' }, 2);
    sut.labels('auth', 'ok').inc();
    expect(await registry.metrics()).toContain('t_total{kind="auth",outcome="ok"} 4');
  });
});
