import { backoffDelayMs, DEFAULT_BACKOFF_CAP_MS } from './backoff';

describe(backoffDelayMs.name, () => {
  const highest = () => 0.999999;

  it.each([
    [0, 999],
    [1, 1999],
    [2, 3999],
    [3, 7999],
    [4, 15_999],
    [5, 29_999],
    [6, 29_999],
    [60, 29_999],
    [1e9, 29_999],
  ])('bounds retry %i by min(30 s, 1 s * 2^attempt): at most %i ms', (attempt, maxMs) => {
    expect(backoffDelayMs(attempt, highest)).toBe(maxMs);
  });

  it('draws the whole range from 0 (full jitter)', () => {
    expect(backoffDelayMs(3, () => 0)).toBe(0);
    expect(backoffDelayMs(3, () => 0.5)).toBe(4000);
  });

  it('keeps the first retry within 1 s and every retry within the cap, whatever the draw', () => {
    for (let i = 0; i <= 100; i++) {
      const draw = () => i / 101;
      expect(backoffDelayMs(0, draw)).toBeLessThan(1000);
      expect(backoffDelayMs(i, draw)).toBeLessThan(DEFAULT_BACKOFF_CAP_MS);
    }
  });

  it('honours custom base and cap', () => {
    expect(backoffDelayMs(0, highest, { baseMs: 100, capMs: 250 })).toBe(99);
    expect(backoffDelayMs(5, highest, { baseMs: 100, capMs: 250 })).toBe(249);
  });

  it('treats a negative attempt as the first', () => {
    expect(backoffDelayMs(-3, highest)).toBe(999);
  });
});
