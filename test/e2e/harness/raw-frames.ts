import { randomBytes } from 'node:crypto';

/** WebSocket opcodes (RFC 6455 §5.2). */
export const OPCODE = { continuation: 0x0, text: 0x1, binary: 0x2, close: 0x8, ping: 0x9, pong: 0xa } as const;

export interface RawFrameOptions {
  /** Final fragment (default true). */
  readonly fin?: boolean;
  /** RSV1-3 bits as a number 0–7 (default 0). */
  readonly rsv?: number;
  /** Mask the payload as a client must (default true). */
  readonly masked?: boolean;
  /** Declared payload length when it should lie about the real one. */
  readonly declaredLength?: number;
}

/** One client frame written by hand, so tests can send what `ws` refuses to (bad bits, unmasked, bad close reasons). */
export function rawFrame(opcode: number, payload: Buffer, options: RawFrameOptions = {}): Buffer {
  const { fin = true, rsv = 0, masked = true } = options;
  const length = options.declaredLength ?? payload.length;
  const head: number[] = [(fin ? 0x80 : 0) | ((rsv & 7) << 4) | (opcode & 0x0f)];
  const maskBit = masked ? 0x80 : 0;
  let extended = Buffer.alloc(0);
  if (length < 126) head.push(maskBit | length);
  else if (length < 65536) {
    head.push(maskBit | 126);
    extended = Buffer.alloc(2);
    extended.writeUInt16BE(length);
  } else {
    head.push(maskBit | 127);
    extended = Buffer.alloc(8);
    extended.writeBigUInt64BE(BigInt(length));
  }
  if (!masked) return Buffer.concat([Buffer.from(head), extended, payload]);
  const mask = randomBytes(4);
  const body = Buffer.from(payload);
  for (let i = 0; i < body.length; i++) body[i] ^= mask[i & 3];
  return Buffer.concat([Buffer.from(head), extended, mask, body]);
}

/** A close frame payload: code, then reason bytes as given (possibly invalid UTF-8). */
export function closePayload(code: number, reason: Buffer = Buffer.alloc(0)): Buffer {
  const out = Buffer.alloc(2 + reason.length);
  out.writeUInt16BE(code);
  reason.copy(out, 2);
  return out;
}
