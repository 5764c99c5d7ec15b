import { KEY_SLOTS, TAGGED_PARTITIONS, crc16, designedSlot, keySlot, partitionTag } from './partition-tags';

const SUFFIX_ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyz';

/** The generator of the tag table: `<p>-` and the first suffix, by length then alphabet, whose slot is designed. */
function generateTag(p: number): string {
  for (let length = 1; length <= 5; length++) {
    for (let n = 0; n < SUFFIX_ALPHABET.length ** length; n++) {
      let suffix = '';
      for (let i = 0, rest = n; i < length; i++, rest = Math.floor(rest / SUFFIX_ALPHABET.length))
        suffix = SUFFIX_ALPHABET[rest % SUFFIX_ALPHABET.length] + suffix;
      if (keySlot(`${p}-${suffix}`) === designedSlot(p)) return `${p}-${suffix}`;
    }
  }
  throw new Error(`no tag for partition ${p}`);
}

/** The slot ranges `redis-cli --cluster create` gives `primaries` primaries (redis-cli.c, clusterManagerCommandCreate). */
function createRanges(primaries: number): Array<[number, number]> {
  const perNode = KEY_SLOTS / primaries;
  const ranges: Array<[number, number]> = [];
  let first = 0;
  for (let i = 0, cursor = 0; i < primaries; i++, cursor += perNode) {
    let last = Math.round(cursor + perNode - 1);
    if (last > KEY_SLOTS || i === primaries - 1) last = KEY_SLOTS - 1;
    if (last < first) last = first;
    ranges.push([first, last]);
    first = last + 1;
  }
  return ranges;
}

const partitions = Array.from({ length: TAGGED_PARTITIONS }, (_, p) => p);

describe(partitionTag.name, () => {
  it('has a tag for each of the 128 partitions', () => {
    expect(TAGGED_PARTITIONS).toBe(128);
  });

  it.each(partitions)('gives partition %i the generated tag, whose slot is p·128+64', (p) => {
    expect(partitionTag(p)).toBe(generateTag(p));
    expect(keySlot(`gateway:th:{${partitionTag(p)}}:room/1`)).toBe(p * 128 + 64);
  });

  it.each([3, 6, 9])('spreads the partitions over %i equal-range primaries within one of each other', (primaries) => {
    const counts = createRanges(primaries).map(
      ([first, last]) =>
        partitions.filter((p) => keySlot(partitionTag(p)) >= first && keySlot(partitionTag(p)) <= last).length,
    );
    expect(counts.reduce((a, b) => a + b, 0)).toBe(128);
    expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(1);
  });

  it.each([-1, 128, 1.5, NaN])('throws a RangeError for partition %p', (p) => {
    expect(() => partitionTag(p)).toThrow(RangeError);
  });
});

describe(keySlot.name, () => {
  it.each([
    // Values from Redis's cluster tutorial and CLUSTER KEYSLOT (re-checked against a real Redis in redis-topologies.e2e-spec.ts).
    ['foo', 12182],
    ['somekey', 11058],
    ['123456789', 0x31c3],
    ['{user1000}.following', keySlot('user1000')],
    ['{user1000}.followers', keySlot('user1000')],
    // An empty tag hashes the whole key; only the first `{` and the first `}` after it count.
    ['foo{}{bar}', crc16(Buffer.from('foo{}{bar}')) % KEY_SLOTS],
    ['foo{{bar}}zap', keySlot('{bar')],
    ['foo{bar}{zap}', keySlot('bar')],
    ['{unclosed', crc16(Buffer.from('{unclosed')) % KEY_SLOTS],
  ])('gives %j slot %i', (key, slot) => {
    expect(keySlot(key)).toBe(slot);
  });

  it('hashes the UTF-8 bytes of a key', () => {
    expect(keySlot('{é}x')).toBe(crc16(Buffer.from([0xc3, 0xa9])) % KEY_SLOTS);
  });
});

describe(crc16.name, () => {
  it('is CRC16-XMODEM: 0x31c3 for "123456789"', () => {
    expect(crc16(Buffer.from('123456789'))).toBe(0x31c3);
  });
});
