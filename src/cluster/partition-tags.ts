/**
 * The hash tag of each partition, chosen so that the 128 partitions spread
 * evenly over the primaries of a Redis Cluster (SPEC §13.5), and the key slot
 * rule Redis applies to a key. Pure: no I/O, no Nest.
 *
 * `redis-cli --cluster create` gives n primaries n equal ranges of the 16384
 * slots. A tag `{p}` lands wherever CRC16 puts it (unevenly); the tag of
 * partition p instead lands on slot p·128+64, the middle of the p-th of 128
 * equal blocks, so 3, 6 or 9 equal ranges hold 43/42/43, 22 or 21, 15 or 14
 * partitions each. A tag is the partition number (readable in a key), a dash,
 * and the shortest lowercase alphanumeric suffix giving that slot (the first
 * in length-then-alphabetical order).
 *
 * Tags are part of every key and channel name: changing this table moves
 * every key (maintenance, SPEC §13.3). partition-tags.spec.ts regenerates it.
 */

/** Number of Redis Cluster hash slots. */
export const KEY_SLOTS = 16384;

/** The tag of partition p is at index p (generated and checked by partition-tags.spec.ts). */
// prettier-ignore
const TAGS: readonly string[] = [
  '0-77v', '1-8h3', '2-kik', '3-1xv', '4-rs', '5-hd6', '6-3lv', '7-ats',
  '8-uv', '9-7p5', '10-hiu', '11-2xh', '12-5aa', '13-2s4', '14-0lh', '15-b0e',
  '16-d5', '17-f3t', '18-c9v', '19-9lc', '20-6dg', '21-1v2', '22-792', '23-0oo',
  '24-3fr', '25-i3g', '26-g1w', '27-5mz', '28-11q', '29-kdd', '30-for', '31-4ww',
  '32-739', '33-0ed', '34-2z8', '35-5hm', '36-25l', '37-5c1', '38-0i3', '39-bq6',
  '40-ho6', '41-g0s', '42-i2c', '43-3gv', '44-8c3', '45-s46', '46-1sv', '47-cks',
  '48-65e', '49-1c8', '50-4a6', '51-37k', '52-4jj', '53-f6g', '54-1gc', '55-6u6',
  '56-9ag', '57-c4r', '58-fzx', '59-ia5', '60-3ca', '61-4q4', '62-g4d', '63-5hi',
  '64-e0e', '65-7lh', '66-9nx', '67-6u5', '68-2m6', '69-07l0', '70-09e', '71-7o8',
  '72-06y', '73-bjt', '74-56', '75-one', '76-6h', '77-2fq', '78-6s', '79-836',
  '80-2ll', '81-h9y', '82-7p', '83-4gd', '84-7j9', '85-0xl', '86-67l', '87-1a1',
  '88-59z', '89-gew', '90-bb', '91-82l', '92-7fu', '93-890', '94-oh4', '95-hza',
  '96-6yo', '97-daj', '98-4a8', '99-37e', '100-44u', '101-fhx', '102-hjh', '103-vs5',
  '104-1rh', '105-cjm', '106-0k5', '107-70', '108-3ac', '109-4s6', '110-150', '111-6cm',
  '112-z', '113-oc4', '114-820', '115-7mu', '116-00t', '117-bly', '118-ooc', '119-q26',
  '120-g5z', '121-5iw', '122-na7', '123-azz', '124-p4', '125-eer', '126-cnz', '127-12w',
];

/** Number of partitions a tag exists for. */
export const TAGGED_PARTITIONS = TAGS.length;

/** Slots per partition block: {@link KEY_SLOTS} / 128. */
export const SLOTS_PER_PARTITION = KEY_SLOTS / TAGGED_PARTITIONS;

/** The hash tag (without braces) of partition `p`, an integer in [0, 128); throws a RangeError otherwise (a bug). */
export function partitionTag(p: number): string {
  const tag = Number.isInteger(p) ? TAGS[p] : undefined;
  if (tag === undefined) throw new RangeError(`no partition ${p}`);
  return tag;
}

/** The slot partition `p`'s tag is designed to hash to: the middle of its block of {@link SLOTS_PER_PARTITION}. */
export function designedSlot(p: number): number {
  return p * SLOTS_PER_PARTITION + SLOTS_PER_PARTITION / 2;
}

/**
 * The Redis Cluster slot of `key` (its UTF-8 bytes), as Redis computes it:
 * CRC16-XMODEM mod 16384 of the hash tag when the key has one (the bytes
 * between the first `{` and the first `}` after it, when not empty), else of
 * the whole key.
 */
export function keySlot(key: string): number {
  const bytes = Buffer.from(key, 'utf8');
  const open = bytes.indexOf(OPEN_BRACE);
  if (open !== -1) {
    const close = bytes.indexOf(CLOSE_BRACE, open + 1);
    if (close > open + 1) return crc16(bytes.subarray(open + 1, close)) % KEY_SLOTS;
  }
  return crc16(bytes) % KEY_SLOTS;
}

const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;

/** CRC16-XMODEM lookup table (polynomial 0x1021), as Redis's crc16.c. */
const CRC16_TABLE = ((): Uint16Array => {
  const table = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let crc = i << 8;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    table[i] = crc;
  }
  return table;
})();

/** CRC16-XMODEM (initial value 0, no final xor) of `bytes`: Redis's `crc16()`. */
export function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) crc = ((crc << 8) & 0xffff) ^ CRC16_TABLE[((crc >> 8) ^ byte) & 0xff];
  return crc;
}
