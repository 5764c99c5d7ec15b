import * as net from 'node:net';
import type { Socket } from 'node:net';
import { TestGateway, startTestGateway } from './harness/gateway';
import { api } from './harness/http';
import { OPCODE, closePayload, rawFrame } from './harness/raw-frames';
import { RawWsClient } from './harness/raw-ws';
import { waitFor, within } from './harness/wait';

/** What a raw TCP exchange got: everything the server wrote, and how long until it closed the socket. */
interface Exchange {
  readonly text: string;
  readonly closedAfterMs: number;
}

/** Open a TCP connection to `port`, write `parts` (each after the previous one was written), and read until the server closes. */
async function exchange(port: number, parts: readonly string[], ms = 5000): Promise<Exchange> {
  const started = Date.now();
  const socket = net.connect(port, '127.0.0.1');
  let text = '';
  socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
  socket.on('error', () => undefined);
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  await within(new Promise<void>((resolve) => socket.once('connect', () => resolve())), `TCP connect to ${port}`);
  for (const part of parts) await new Promise<void>((resolve) => socket.write(part, () => resolve()));
  try {
    await within(closed, `the server to close the connection (got so far: ${JSON.stringify(text.slice(0, 200))})`, ms);
  } finally {
    socket.destroy();
  }
  return { text, closedAfterMs: Date.now() - started };
}

const statusOf = (text: string): number => Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);

describe('listener hardening (issue 11)', () => {
  let t: TestGateway;
  afterEach(() => t.close());

  describe('with short HTTP timeouts', () => {
    beforeEach(async () => {
      t = await startTestGateway({
        HTTP_HEADERS_TIMEOUT: '400ms',
        HTTP_REQUEST_TIMEOUT: '800ms',
        HTTP_KEEP_ALIVE_TIMEOUT: '300ms',
      });
    });
    const ports = (): Array<[string, number]> => [
      ['public', t.gateway.publicAddress.port],
      ['internal', t.gateway.internalAddress.port],
    ];

    it('answers CONNECT with 404 on both listeners (defect 2)', async () => {
      for (const [name, port] of ports()) {
        const { text } = await exchange(port, ['CONNECT 127.0.0.1:1 HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n']);
        expect([name, statusOf(text)]).toEqual([name, 404]);
      }
    });

    it('answers headers that never finish with 408 within HTTP_HEADERS_TIMEOUT on both listeners, serving others meanwhile', async () => {
      for (const [name, port] of ports()) {
        const slow = exchange(port, ['GET /health/live HTTP/1.1\r\nHost: x\r\nX-Slow: a']);
        expect((await fetch(`http://127.0.0.1:${port}/health/live`)).status).toBe(200);
        const { text, closedAfterMs } = await slow;
        expect([name, statusOf(text)]).toEqual([name, 408]);
        expect(closedAfterMs).toBeLessThan(400 + 1500);
      }
    });

    it('answers a connection that sends nothing within HTTP_HEADERS_TIMEOUT', async () => {
      for (const [name, port] of ports()) {
        const { closedAfterMs } = await exchange(port, []);
        expect([name, closedAfterMs < 400 + 1500]).toEqual([name, true]);
      }
    });

    it('answers a /v1 body that never finishes with 408 within HTTP_REQUEST_TIMEOUT', async () => {
      const head =
        'POST /v1/publish/x HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"a":';
      const { text, closedAfterMs } = await exchange(t.gateway.internalAddress.port, [head]);
      expect(statusOf(text)).toBe(408);
      expect(closedAfterMs).toBeLessThan(800 + 1500);
    });

    it('closes an idle keep-alive connection after HTTP_KEEP_ALIVE_TIMEOUT', async () => {
      const { text, closedAfterMs } = await exchange(t.gateway.internalAddress.port, [
        'GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n',
      ]);
      expect(statusOf(text)).toBe(200);
      expect(closedAfterMs).toBeLessThan(300 + 1500);
    });
  });

  describe('closing handshakes', () => {
    beforeEach(async () => {
      t = await startTestGateway({ PING_INTERVAL: '60s', CLIENT_QUEUE_MAX_BYTES: '64KiB' });
    });

    it('destroys the TCP connection about 5 s after our close frame when the client never answers it', async () => {
      const raw = await RawWsClient.open(t.gateway.publicAddress.port, []);
      expect((await raw.handshake()).status).toBe(101);
      expect((await raw.next())[0]).toBe('hello');
      const sent = Date.now();
      raw.write(rawFrame(OPCODE.binary, Buffer.from('x')));
      expect(await raw.closed()).toEqual({ code: 1003, reason: 'validation_error' });
      await raw.socketClosed(8000); // heartbeat alone would hold it 3 × 60 s
      expect(Date.now() - sent).toBeGreaterThanOrEqual(4000);
      await t.untilOpenConnections(0);
    }, 15_000);

    it('names the close frame when its reason is invalid UTF-8 (defect 5)', async () => {
      const raw = await RawWsClient.open(t.gateway.publicAddress.port, []);
      expect((await raw.next())[0]).toBe('hello');
      raw.write(rawFrame(OPCODE.close, closePayload(1000, Buffer.from([0x61, 0xff, 0xfe]))));
      expect(await raw.closed()).toEqual({ code: 1007, reason: 'validation_error' });
      expect(raw.frames.slice(1)).toEqual([
        ['fatal_error', { error_kind: 'validation_error' }, 'invalid UTF-8 in the reason of a close frame'],
      ]);
      await raw.close();
    });

    it('still names the text frame for invalid UTF-8 in a text frame', async () => {
      const raw = await RawWsClient.open(t.gateway.publicAddress.port, []);
      expect((await raw.next())[0]).toBe('hello');
      raw.write(rawFrame(OPCODE.text, Buffer.from([0x5b, 0x22, 0xff, 0x22, 0x5d])));
      expect(await raw.closed()).toEqual({ code: 1007, reason: 'validation_error' });
      expect(raw.frames.slice(1)).toEqual([
        ['fatal_error', { error_kind: 'validation_error' }, 'invalid UTF-8 in a text frame'],
      ]);
      await raw.close();
    });

    it('logs a slow consumer that never reads again as closed 1008 slow_consumer, and drops it within about 5 s', async () => {
      const { client, cid } = await t.helloAs('slow');
      expect((await api(t.apiUrl, 'PUT', `/v1/connection/${cid}/subscriptions/flood`)).status).toBe(204);
      (client.socket as unknown as { _socket: Socket })._socket.pause();
      const closedLine = (): Record<string, unknown> | undefined =>
        t.logs
          .map((line) => JSON.parse(line) as Record<string, unknown>)
          .find((e) => e.msg === 'connection closed' && e.connection_id === cid);
      for (let seq = 0; seq < 4000 && closedLine() === undefined && (await t.openConnections()) === 1; seq++) {
        expect((await api(t.apiUrl, 'POST', '/v1/publish/flood', { seq, pad: 'x'.repeat(10 * 1024) })).status).toBe(
          204,
        );
      }
      const line = await waitFor(closedLine, 'the "connection closed" log line of the slow consumer', 8000);
      expect(line).toMatchObject({ code: 1008, reason: 'slow_consumer', closed_by: 'gateway' });
      await t.untilOpenConnections(0, 1000);
    }, 20_000);
  });
});
