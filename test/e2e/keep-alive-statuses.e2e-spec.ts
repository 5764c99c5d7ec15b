import * as net from 'node:net';
import { TestGateway, startTestGateway } from './harness/gateway';
import { within } from './harness/wait';

/**
 * Issue 18 (SPEC §5, issue 11): on a kept-alive connection, a request Node's
 * HTTP parser rejects gets its status after an earlier answer on the same
 * connection, `/v1` answers included, on both listeners: never a bare close
 * or a reset.
 */

const HEADERS_TIMEOUT_MS = 500;
const REQUEST_TIMEOUT_MS = 1000;

/**
 * One client TCP connection kept alive across requests: writes raw bytes and
 * reads whole answers (head, then a body of Content-Length bytes), each
 * described as its status code, or as how the connection ended without one.
 */
class KeptAliveConnection {
  private received = Buffer.alloc(0);
  private ended: string | null = null;
  private wake: () => void = () => undefined;

  private constructor(private readonly socket: net.Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.received = Buffer.concat([this.received, chunk]);
      this.wake();
    });
    socket.on('error', (err: NodeJS.ErrnoException) => {
      this.ended ??= `reset (${err.code ?? err.message})`;
      this.wake();
    });
    socket.on('close', () => {
      this.ended ??= 'closed without an answer';
      this.wake();
    });
  }

  static async open(port: number): Promise<KeptAliveConnection> {
    const socket = net.connect(port, '127.0.0.1');
    await within(new Promise<void>((resolve) => socket.once('connect', () => resolve())), `TCP connect to ${port}`);
    return new KeptAliveConnection(socket);
  }

  write(text: string): void {
    this.socket.write(Buffer.from(text, 'latin1'));
  }

  /** The status of the next whole answer, or e.g. 'closed without an answer'. */
  next(ms = 3000): Promise<string> {
    return within(
      new Promise<string>((resolve) => {
        this.wake = () => {
          const answer = this.takeAnswer();
          if (answer !== null) resolve(answer);
          else if (this.ended !== null) resolve(this.ended);
        };
        this.wake();
      }),
      'an answer on the kept-alive connection',
      ms,
    );
  }

  destroy(): void {
    this.socket.destroy();
  }

  /** Remove one whole answer from the received bytes and describe it; null while incomplete. */
  private takeAnswer(): string | null {
    const headEnd = this.received.indexOf('\r\n\r\n');
    if (headEnd < 0) return null;
    const head = this.received.subarray(0, headEnd).toString('latin1');
    const length = Number(/\r\ncontent-length:\s*(\d+)/i.exec(head)?.[1] ?? 0);
    if (this.received.length < headEnd + 4 + length) return null;
    this.received = this.received.subarray(headEnd + 4 + length);
    return /^HTTP\/1\.1 (\d{3}) /.exec(head)?.[1] ?? `not a status line: ${JSON.stringify(head.slice(0, 60))}`;
  }
}

describe('parser-rejected requests on a kept-alive connection (issue 18)', () => {
  let t: TestGateway;
  beforeAll(async () => {
    t = await startTestGateway({
      HTTP_HEADERS_TIMEOUT: `${HEADERS_TIMEOUT_MS}ms`,
      HTTP_REQUEST_TIMEOUT: `${REQUEST_TIMEOUT_MS}ms`,
      HTTP_KEEP_ALIVE_TIMEOUT: '5s',
    });
  });
  afterAll(() => t.close());

  /** A first request answered without closing the connection, and its status. */
  const FIRST = {
    '/v1 publish': [
      'POST /v1/publish/x HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}',
      '204',
    ],
    'GET /health/live': ['GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n', '200'],
  } as const;
  const REJECTED = {
    'an oversized head': [`GET /v1/${'x'.repeat(17_000)} HTTP/1.1\r\nHost: x\r\n\r\n`, '431'],
    'a NUL byte in a header value': ['GET /v1/x HTTP/1.1\r\nHost: x\r\nBad: a\0b\r\n\r\n', '400'],
    'a head that never ends': ['GET /v1/x HTTP/1.1\r\nHost: x\r\nX-Slow: a', '408'],
  } as const;
  const port = (listener: 'internal' | 'public'): number =>
    (listener === 'internal' ? t.gateway.internalAddress : t.gateway.publicAddress).port;

  describe.each([
    ['internal', '/v1 publish'],
    ['internal', 'GET /health/live'],
    ['public', 'GET /health/live'],
  ] as const)('on the %s listener, after %s', (listener, first) => {
    it.each(Object.keys(REJECTED) as Array<keyof typeof REJECTED>)('answers %s with its status', async (rejected) => {
      const connection = await KeptAliveConnection.open(port(listener));
      try {
        connection.write(FIRST[first][0]);
        const firstStatus = await connection.next();
        const started = Date.now();
        connection.write(REJECTED[rejected][0]);
        const status = await connection.next(HEADERS_TIMEOUT_MS + 3000);
        expect({ firstStatus, status }).toEqual({ firstStatus: FIRST[first][1], status: REJECTED[rejected][1] });
        if (status === '408') expect(Date.now() - started).toBeGreaterThanOrEqual(HEADERS_TIMEOUT_MS - 50);
        expect(await connection.next()).toBe('closed without an answer');
      } finally {
        connection.destroy();
      }
    });
  });

  it('answers 32 kept-alive connections at once, each a /v1 204 and then an oversized head, with 431', async () => {
    const outcomes = await Promise.all(
      Array.from({ length: 32 }, async () => {
        const connection = await KeptAliveConnection.open(port('internal'));
        try {
          connection.write(FIRST['/v1 publish'][0]);
          const firstStatus = await connection.next();
          connection.write(REJECTED['an oversized head'][0]);
          return `${firstStatus} then ${await connection.next()}`;
        } finally {
          connection.destroy();
        }
      }),
    );
    expect(outcomes).toEqual(Array.from({ length: 32 }, () => '204 then 431'));
  });

  /** The answers on one connection to `parts`, each written once the answers before it arrived (`expect` of them), until it closes. */
  async function conversation(
    listener: 'internal' | 'public',
    parts: ReadonlyArray<readonly [string, number]>,
  ): Promise<string[]> {
    const connection = await KeptAliveConnection.open(port(listener));
    const answers: string[] = [];
    try {
      for (const [text, expected] of parts) {
        connection.write(text);
        for (let i = 0; i < expected; i++) answers.push(await connection.next(REQUEST_TIMEOUT_MS + 3000));
      }
      answers.push(await connection.next(REQUEST_TIMEOUT_MS + 3000));
      return answers;
    } finally {
      connection.destroy();
    }
  }
  const BAD_HEAD = 'GET /v1/x HTTP/1.1\r\nHost: x\r\nBad: a\0b\r\n\r\n';
  const NOPE = 'GET /nope HTTP/1.1\r\nHost: x\r\n\r\n';
  const PUBLISH = FIRST['/v1 publish'][0];
  const HEALTH = FIRST['GET /health/live'][0];

  it.each([
    ['internal', 'a /v1 204, a 404', PUBLISH + NOPE, ['204', '404']],
    ['internal', 'a 404, a /v1 204', NOPE + PUBLISH, ['404', '204']],
    ['public', 'a health 200, a 404', HEALTH + NOPE, ['200', '404']],
  ] as const)(
    'on the %s listener, answers pipelined requests (%s) in order, then the rejected one after them',
    async (listener, _, pipelined, statuses) => {
      expect(await conversation(listener, [[pipelined + BAD_HEAD, 3]])).toEqual([
        ...statuses,
        '400',
        'closed without an answer',
      ]);
    },
  );

  it('answers every pipelined request in order, those answered by the /v1 error filter included', async () => {
    const badJson =
      'POST /v1/publish/x HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5\r\n\r\n{"a":';
    const trailing = 'PUT /v1/connection/x/subscriptions/ HTTP/1.1\r\nHost: x\r\n\r\n';
    const connection = await KeptAliveConnection.open(port('internal'));
    try {
      connection.write(PUBLISH + NOPE + badJson + trailing + HEALTH + PUBLISH);
      const answers: string[] = [];
      for (let i = 0; i < 6; i++) answers.push(await connection.next());
      expect(answers).toEqual(['204', '404', '400', '404', '200', '204']);
    } finally {
      connection.destroy();
    }
  });

  it.each([
    ['an early /v1 404', 'POST /v1/publish/ HTTP/1.1'],
    ['an early 404 of an unknown route', 'POST /nope HTTP/1.1'],
  ])(
    'closes without a second status when the body of a request answered by %s turns out malformed',
    async (_, requestLine) => {
      const head = `${requestLine}\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n`;
      expect(
        await conversation('internal', [
          [head, 1],
          ['zz\r\n', 0],
        ]),
      ).toEqual(['404', 'closed without an answer']);
    },
  );

  it('closes without a 408 when a body declared by a request answered early never comes', async () => {
    const head =
      'POST /v1/publish/ HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{';
    expect(await conversation('internal', [[head, 1]])).toEqual(['404', 'closed without an answer']);
  });
});
