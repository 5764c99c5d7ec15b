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
  const head = [`${method} ${path} HTTP/1.1`, 'Host: gateway.test', 'Connection: close', ...headerLines].join('\r\n') + '\r\n\r\n';
  return body === undefined ? Buffer.from(head, 'latin1') : Buffer.concat([Buffer.from(head, 'latin1'), body]);
}
