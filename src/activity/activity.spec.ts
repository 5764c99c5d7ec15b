import { clampActiveMs, extendDeadline } from './activity';

describe(clampActiveMs.name, () => {
  it.each([
    [0, 1000],
    [1, 1000],
    [2, 2000],
    [7200, 7_200_000],
    [99999, 7_200_000],
  ])('clamps active %i s to %i ms within [1s, 2h]', (seconds, ms) => {
    expect(clampActiveMs(seconds, 1000, 7_200_000)).toBe(ms);
  });
});

describe(extendDeadline.name, () => {
  it('moves a deadline forward', () => {
    expect(extendDeadline(1000, 900, 500)).toBe(1400);
  });

  it('never moves a deadline back', () => {
    expect(extendDeadline(5000, 900, 500)).toBe(5000);
  });
});
