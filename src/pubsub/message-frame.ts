const FRAME_TAIL = 0x5d; // ']'

/**
 * A message frame: `head` (up to and including the meta's `,`) + the
 * payload's JSON bytes + `]`, in one Buffer. `isKept` (topic history, SPEC
 * §12.4): in memory of its own rather than a slice of Node's shared 8 KiB
 * pool, so a kept 1 KiB message holds ~1 KiB and not the slab it shares.
 * One allocation and one copy either way.
 */
export function encodeMessageFrame(head: string, payload: Buffer, isKept = false): Buffer {
  const headBytes = Buffer.byteLength(head);
  const length = headBytes + payload.length + 1;
  const frame = isKept ? Buffer.allocUnsafeSlow(length) : Buffer.allocUnsafe(length);
  frame.write(head, 0);
  payload.copy(frame, headBytes);
  frame[length - 1] = FRAME_TAIL;
  return frame;
}
