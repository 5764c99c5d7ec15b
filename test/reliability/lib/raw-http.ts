import * as net from 'node:net';

/** How a raw request ends on the client side. */
export type Ending = 'wait' | 'half-close' | 'drop';

/** The status line's code, 0 when the server closed without answering, -1 when we dropped the connection ourselves. */
export interface RawAnswer {
  readonly status: number;
  readonly head: string;
}

/**
 * Write `parts` on a fresh TCP connection and read the status line of the
 * answer. `half-close` ends our side after writing; `drop` destroys the
 * connection after writing and reads nothing. Bounded by `ms`.
 */
export function rawHttp(port: number, parts: readonly Buffer[], ending: Ending, ms = 15_000): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let received = '';
    let done = false;
    const finish = (status: number): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ status, head: received.slice(0, 300) });
    };
    const timer = setTimeout(() => finish(-2), ms);
    socket.on('error', () => undefined);
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
      // Skip interim 1xx answers (100 Continue): the final status is what counts.
      received = received.replace(/^HTTP\/1\.[01] 1\d\d[^\r\n]*\r\n(?:[^\r\n]+\r\n)*\r\n/, '');
      const match = /^HTTP\/1\.[01] (\d{3})[^\r\n]*\r\n/.exec(received);
      if (match !== null && received.includes('\r\n\r\n')) finish(Number(match[1]));
    });
    socket.on('close', () => finish(0));
    socket.on('connect', () => {
      for (const part of parts) socket.write(part);
      if (ending === 'half-close') socket.end();
      if (ending === 'drop') socket.write(Buffer.alloc(0), () => finish(-1));
    });
  });
}

/** A request's bytes: request line, header lines, blank line, body. */
export function requestBytes(method: string, path: string, headerLines: readonly string[], body?: Buffer): Buffer {
  const head =
    [`${method} ${path} HTTP/1.1`, 'Host: gateway.test', 'Connection: close', ...headerLines].join('\r\n') + '\r\n\r\n';
  return body === undefined ? Buffer.from(head, 'latin1') : Buffer.concat([Buffer.from(head, 'latin1'), body]);
}

/** One answer read off a kept-alive connection. */
export interface KeptAliveAnswer {
  /** The final status; 0 when the connection ended without (the rest of) an answer. */
  readonly status: number;
  /** The connection ended with ECONNRESET or EPIPE before this answer. */
  readonly reset: boolean;
  /** The answer says `Connection: close` (or the connection ended): nothing more comes on it. */
  readonly closes: boolean;
}

interface Pending {
  readonly method: string;
  readonly resolve: (answer: KeptAliveAnswer) => void;
}

/**
 * One client TCP connection reused across requests, as a keep-alive client or
 * a pipelining one uses it: `send` writes a request's bytes at once and resolves
 * its answer (interim 1xx skipped, the body read by Content-Length or chunks,
 * none after HEAD, 204 and 304), answers in request order. Bounded by `ms` per request.
 */
export class KeptAliveConnection {
  private received: Buffer = Buffer.alloc(0);
  private readonly pending: Pending[] = [];
  private ended: 'closed' | 'reset' | null = null;
  private closing = false;

  private constructor(
    private readonly socket: net.Socket,
    private readonly ms: number,
  ) {
    socket.on('data', (chunk: Buffer) => {
      this.received = this.received.length === 0 ? chunk : Buffer.concat([this.received, chunk]);
      this.settle();
    });
    socket.on('error', (err: NodeJS.ErrnoException) => {
      this.ended ??= err.code === 'ECONNRESET' || err.code === 'EPIPE' ? 'reset' : 'closed';
      this.settle();
    });
    socket.on('close', () => {
      this.ended ??= 'closed';
      this.settle();
    });
  }

  static open(port: number, ms = 15_000): KeptAliveConnection {
    return new KeptAliveConnection(net.connect(port, '127.0.0.1'), ms);
  }

  /** Whether a request may still be written (no answer closed it, the server did not). */
  get usable(): boolean {
    return this.ended === null && !this.socket.destroyed && !this.closing;
  }

  send(bytes: Buffer, method: string): Promise<KeptAliveAnswer> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.ended ??= 'closed';
        this.socket.destroy();
        this.settle();
      }, this.ms);
      this.pending.push({ method, resolve: (answer) => (clearTimeout(timer), resolve(answer)) });
      if (this.ended !== null) return this.settle();
      this.socket.write(bytes);
    });
  }

  destroy(): void {
    this.socket.destroy();
  }

  private settle(): void {
    while (this.pending.length > 0) {
      const answer = this.takeAnswer(this.pending[0].method);
      if (answer === null) break;
      if (answer.closes) this.closing = true;
      this.pending.shift()!.resolve(answer);
    }
    if (this.ended === null) return;
    const reset = this.ended === 'reset';
    for (const waiting of this.pending.splice(0)) waiting.resolve({ status: 0, reset, closes: true });
  }

  /** Take one whole answer off the received bytes; null while incomplete (an answer ended by the close counts once ended). */
  private takeAnswer(method: string): KeptAliveAnswer | null {
    for (;;) {
      const headEnd = this.received.indexOf('\r\n\r\n');
      if (headEnd < 0) return null;
      const head = this.received.subarray(0, headEnd).toString('latin1');
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head)?.[1] ?? 0);
      const rest = this.received.subarray(headEnd + 4);
      if (status >= 100 && status < 200) {
        this.received = rest;
        continue;
      }
      const noBody = method === 'HEAD' || status === 204 || status === 304;
      const framed = noBody || /\r\n(content-length|transfer-encoding):/i.test(head);
      const bodyEnd = noBody ? 0 : KeptAliveConnection.bodyLength(head, rest, this.ended !== null);
      if (bodyEnd === null) return null;
      this.received = rest.subarray(bodyEnd);
      return {
        status,
        reset: false,
        closes: status === 0 || !framed || /\r\nconnection:\s*close\s*(\r\n|$)/i.test(head),
      };
    }
  }

  /** Bytes of `rest` that are this answer's body; null while incomplete. */
  private static bodyLength(head: string, rest: Buffer, ended: boolean): number | null {
    const length = /\r\ncontent-length:\s*(\d+)/i.exec(head);
    if (length !== null) return rest.length >= Number(length[1]) ? Number(length[1]) : null;
    if (!/\r\ntransfer-encoding:\s*chunked/i.test(head)) return ended ? rest.length : null; // until the close
    let at = 0;
    for (;;) {
      const lineEnd = rest.indexOf('\r\n', at);
      if (lineEnd < 0) return null;
      const size = parseInt(rest.subarray(at, lineEnd).toString('latin1'), 16);
      if (size === 0) return rest.length >= lineEnd + 4 ? lineEnd + 4 : null;
      at = lineEnd + 2 + size + 2;
      if (rest.length < at) return null;
    }
  }
}
