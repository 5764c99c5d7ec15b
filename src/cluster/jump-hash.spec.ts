import { jumpHash } from './jump-hash';

describe('jumpHash', () => {
  // Reference values published with ports of the paper's C++ (go-jump-consistent-hash's README: 256 over 1024 →
  // 520; the Rust jump-consistent-hash crate's doc examples: 0, 1, 2 over 60 → 0, 55, 46).
  it.each([
    [1, 1, 0],
    [256, 1024, 520],
    [0, 60, 0],
    [1, 60, 55],
    [2, 60, 46],
  ])('key %d over %d buckets → %d', (key, buckets, expected) => {
    expect(jumpHash(key, buckets)).toBe(expected);
  });

  it('spreads 128 partitions evenly enough and moves only what goes to a new bucket', () => {
    for (const n of [2, 3, 4, 8]) {
      const counts = new Array<number>(n).fill(0);
      for (let p = 0; p < 128; p++) counts[jumpHash(p, n)]++;
      expect(Math.min(...counts)).toBeGreaterThan(128 / n / 2);
      for (let p = 0; p < 128; p++) {
        const before = jumpHash(p, n - 1);
        const after = jumpHash(p, n);
        expect(after === before || after === n - 1).toBe(true);
      }
    }
  });

  it('refuses keys and bucket counts it cannot hash', () => {
    expect(() => jumpHash(-1, 3)).toThrow(RangeError);
    expect(() => jumpHash(1, 0)).toThrow(RangeError);
  });
});
