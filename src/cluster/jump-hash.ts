/**
 * Jump consistent hash (Lamping and Veach, 2014): the bucket in [0, buckets)
 * of a 64-bit key. Growing from N to N+1 buckets moves about 1/(N+1) of the
 * keys, all into the new bucket. Pure.
 */
export function jumpHash(key: number, buckets: number): number {
  if (!Number.isSafeInteger(key) || key < 0) throw new RangeError(`jumpHash: key ${key} is not a whole number`);
  if (!Number.isSafeInteger(buckets) || buckets < 1) throw new RangeError(`jumpHash: ${buckets} buckets`);
  let state = BigInt(key);
  let bucket = -1;
  let next = 0;
  while (next < buckets) {
    bucket = next;
    state = (state * 2862933555777941757n + 1n) & 0xffff_ffff_ffff_ffffn;
    next = Math.floor((bucket + 1) * (2 ** 31 / (Number(state >> 33n) + 1)));
  }
  return bucket;
}
