import * as net from 'node:net';

/** A SUBSCRIBE, PSUBSCRIBE or SSUBSCRIBE command as a client sends it (RESP: the name as a bulk string), any case. */
const SUBSCRIBE_COMMAND = /\$(?:9\r\nsubscribe|10\r\n[ps]subscribe)\r\n/i;
/** Enough of a chunk's end to find a command name split across two chunks. */
const TAIL_CHARS = 16;

/**
 * A TCP proxy in front of Redis that makes the nodes' subscriber connections
 * slow and leaves their command connections fast: once a connection's
 * client→server bytes contain a SUBSCRIBE-family command, that chunk and
 * every later one on it reach Redis `delayMs` later, in order. Replies pass
 * at once. A node behind it hears a topic's channel only `delayMs` after it
 * asked to, while other nodes' PUBLISHes are not held back: a publish sent
 * before the SUBSCRIBE is confirmed is lost (SPEC §11 read-your-writes is
 * what must prevent that). Point REDIS_URL at {@link url}.
 */
export class RedisDelayProxy {
  /** Connections seen sending a SUBSCRIBE-family command (and slowed since). */
  subscriberConnections = 0;
  private port = 0;
  private readonly sockets = new Set<net.Socket>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly server = net.createServer((client) => this.accept(client));

  private constructor(
    private readonly target: URL,
    private readonly delayMs: number,
  ) {}

  /** Listen on 127.0.0.1 (free port) in front of the Redis at `redisUrl`. */
  static async start(redisUrl: string, delayMs: number): Promise<RedisDelayProxy> {
    const proxy = new RedisDelayProxy(new URL(redisUrl), delayMs);
    await new Promise<void>((resolve) => proxy.server.listen(0, '127.0.0.1', resolve));
    proxy.port = (proxy.server.address() as net.AddressInfo).port;
    return proxy;
  }

  /** The Redis URL through the proxy (credentials and database kept). */
  get url(): string {
    const url = new URL(this.target.href);
    url.hostname = '127.0.0.1';
    url.port = String(this.port);
    return url.href;
  }

  /** Stop listening and cut every connection through it. */
  async close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const timer of this.timers) clearTimeout(timer);
    for (const socket of this.sockets) socket.destroy();
    await closed;
  }

  private track(socket: net.Socket): void {
    this.sockets.add(socket);
    socket.once('close', () => this.sockets.delete(socket));
  }

  private accept(client: net.Socket): void {
    const redis = net.connect(Number(this.target.port || 6379), this.target.hostname);
    this.track(client);
    this.track(redis);
    // An end passes on once what came before it did (pipe ends `client`; `send` ends `redis`); an error cuts both.
    for (const socket of [client, redis]) socket.on('error', () => (client.destroy(), redis.destroy()));
    redis.pipe(client);
    const send = this.delayedWriter(redis);
    let isSubscriber = false;
    let tail = '';
    client.on('data', (chunk: Buffer) => {
      if (!isSubscriber) {
        const text = tail + chunk.toString('latin1');
        isSubscriber = SUBSCRIBE_COMMAND.test(text);
        if (isSubscriber) this.subscriberConnections++;
        tail = text.slice(-TAIL_CHARS);
      }
      if (isSubscriber) send(chunk);
      else redis.write(chunk);
    });
    client.on('end', () => (isSubscriber ? send(null) : redis.end()));
  }

  /**
   * Writes to `socket`, each `delayMs` after it was handed over, in the order
   * handed over; `null` ends the socket.
   */
  private delayedWriter(socket: net.Socket): (chunk: Buffer | null) => void {
    const queue: Array<{ dueAt: number; chunk: Buffer | null }> = [];
    const flush = (): void => {
      while (queue.length > 0 && queue[0].dueAt <= Date.now()) {
        const { chunk } = queue.shift() as { chunk: Buffer | null };
        if (chunk === null) socket.end();
        else socket.write(chunk);
      }
      if (queue.length > 0) schedule(queue[0].dueAt - Date.now());
    };
    const schedule = (ms: number): void => {
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        if (!socket.destroyed) flush();
      }, ms);
      this.timers.add(timer);
    };
    return (chunk) => {
      queue.push({ dueAt: Date.now() + this.delayMs, chunk });
      if (queue.length === 1) schedule(this.delayMs);
    };
  }
}
