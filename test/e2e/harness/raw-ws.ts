import { randomBytes } from 'node:crypto';
import * as net from 'node:net';
import { within } from './wait';
import { Frame, PROTOCOL } from './ws-client';

/** The status line and headers the server answered a raw upgrade with. */
export interface RawResponse {
  readonly status: number;
  /** Header lines as sent, `Name: value`. */
  readonly headerLines: readonly string[];
}

/**
 * A WebSocket client written by hand over `net.connect`, for requests the `ws`
 * client cannot make (e.g. two `Cookie` header lines: Node joins a Cookie array
 * into one line). It only reads: text frames are queued, a close frame resolves
 * `closed()`.
 */
export class RawWsClient {
  readonly frames: Frame[] = [];
  private buffer = Buffer.alloc(0);
  private response: RawResponse | null = null;
  private readonly responseWaiters: Array<(r: RawResponse) => void> = [];
  private readonly queue: Frame[] = [];
  private readonly frameWaiters: Array<(f: Frame) => void> = [];
  private closeInfo: { code: number; reason: string } | null = null;
  private readonly closeWaiters: Array<(c: { code: number; reason: string }) => void> = [];
  private readonly ended: Promise<void>;

  private constructor(private readonly socket: net.Socket) {
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', () => undefined);
    this.ended = new Promise((resolve) => socket.once('close', () => resolve()));
  }

  /**
   * Open a TCP connection to `port` and write an upgrade request for `path`
   * with the standard WebSocket headers (protocol `PROTOCOL`) plus `extraHeaderLines`
   * (each `Name: value`, written as is, duplicates included).
   */
  static async open(port: number, extraHeaderLines: readonly string[], path = '/'): Promise<RawWsClient> {
    const socket = net.connect(port, '127.0.0.1');
    await within(
      new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject)),
      `TCP connect to ${port}`,
    );
    const client = new RawWsClient(socket);
    const lines = [
      `GET ${path} HTTP/1.1`,
      `Host: 127.0.0.1:${port}`,
      'Upgrade: websocket',
      'Connection: Upgrade',
      `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}`,
      'Sec-WebSocket-Version: 13',
      `Sec-WebSocket-Protocol: ${PROTOCOL}`,
      ...extraHeaderLines,
    ];
    socket.write(lines.join('\r\n') + '\r\n\r\n');
    return client;
  }

  /** The HTTP response head (101 or a refusal), within `ms`. */
  handshake(ms = 2000): Promise<RawResponse> {
    if (this.response) return Promise.resolve(this.response);
    return within(new Promise((resolve) => this.responseWaiters.push(resolve)), 'the upgrade response', ms);
  }

  /** The next text frame, within `ms`. */
  next(ms = 2000): Promise<Frame> {
    const frame = this.queue.shift();
    if (frame) return Promise.resolve(frame);
    return within(
      new Promise<Frame>((resolve) => this.frameWaiters.push(resolve)),
      `a frame (seen so far: ${this.framesSeen()})`,
      ms,
    );
  }

  /** The frames seen so far as JSON, or their count when they nest too deep for JSON.stringify. */
  private framesSeen(): string {
    try {
      return JSON.stringify(this.frames).slice(0, 500);
    } catch {
      return `${this.frames.length} frames`;
    }
  }

  /** The server's close frame, within `ms`. */
  closed(ms = 2000): Promise<{ code: number; reason: string }> {
    if (this.closeInfo) return Promise.resolve(this.closeInfo);
    return within(new Promise((resolve) => this.closeWaiters.push(resolve)), 'a close frame', ms);
  }

  /** Write raw bytes (e.g. frames from raw-frames.ts) to the TCP connection. */
  write(bytes: Buffer): void {
    this.socket.write(bytes);
  }

  /** Resolves once the TCP connection is gone (whoever closed it), within `ms`. */
  socketClosed(ms = 2000): Promise<void> {
    return within(this.ended, 'the TCP connection to close', ms);
  }

  /** Destroy the TCP connection and await its close. */
  async close(): Promise<void> {
    this.socket.destroy();
    await this.ended;
  }

  private onData(chunk: Buffer): void {
    this.buffer = Buffer.concat([this.buffer, chunk]);
    if (this.response === null) {
      const end = this.buffer.indexOf('\r\n\r\n');
      if (end < 0) return;
      const [statusLine, ...headerLines] = this.buffer.subarray(0, end).toString('latin1').split('\r\n');
      this.response = { status: Number(statusLine.split(' ')[1]), headerLines };
      this.buffer = this.buffer.subarray(end + 4);
      for (const w of this.responseWaiters.splice(0)) w(this.response);
    }
    this.readFrames();
  }

  /** Server frames are unmasked: FIN/opcode byte, length (7, 16 or 64 bits), payload. */
  private readFrames(): void {
    for (;;) {
      if (this.buffer.length < 2) return;
      const opcode = this.buffer[0] & 0x0f;
      let length = this.buffer[1] & 0x7f;
      let offset = 2;
      if (length === 126) {
        if (this.buffer.length < 4) return;
        length = this.buffer.readUInt16BE(2);
        offset = 4;
      } else if (length === 127) {
        if (this.buffer.length < 10) return;
        length = Number(this.buffer.readBigUInt64BE(2));
        offset = 10;
      }
      if (this.buffer.length < offset + length) return;
      const payload = this.buffer.subarray(offset, offset + length);
      this.buffer = this.buffer.subarray(offset + length);
      if (opcode === 0x1) this.onFrame(JSON.parse(payload.toString('utf8')) as Frame);
      else if (opcode === 0x8) this.onClose(payload);
    }
  }

  private onFrame(frame: Frame): void {
    this.frames.push(frame);
    const waiter = this.frameWaiters.shift();
    if (waiter) waiter(frame);
    else this.queue.push(frame);
  }

  private onClose(payload: Buffer): void {
    this.closeInfo = {
      code: payload.length >= 2 ? payload.readUInt16BE(0) : 1005,
      reason: payload.subarray(2).toString('utf8'),
    };
    for (const w of this.closeWaiters.splice(0)) w(this.closeInfo);
  }
}
