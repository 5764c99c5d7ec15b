import * as net from 'node:net';

/**
 * A tiny TCP proxy on 127.0.0.1 (the only one of the harness), to cut
 * connections the way a network does and to stand in for a load balancer.
 * Each accepted connection goes to the first port of `targets()` that accepts
 * it (a refused one is skipped; none: the connection is closed), and bytes
 * are piped both ways until either side closes. A client behind it reconnects
 * to another node when its node stops, as behind a real balancer.
 */
export class TcpProxy {
  port = 0;
  private isBlocked = false;
  /** While holding: what upstreams sent to their clients, in order, not passed on yet. */
  private held: Array<{ client: net.Socket; chunk: Buffer }> | null = null;
  private readonly heldWaiters = new Set<() => void>();
  private readonly sockets = new Set<net.Socket>();
  /** Connected upstream sockets and the port each goes to. */
  private readonly upstreams = new Map<net.Socket, number>();
  private readonly server = net.createServer((client) => this.accept(client));

  private constructor(private readonly targets: () => number[]) {}

  /** Listen on a free port; `targets`: one port, or the ports to try in order, read per connection. */
  static async start(targets: number | (() => number[])): Promise<TcpProxy> {
    const proxy = new TcpProxy(typeof targets === 'number' ? () => [targets] : targets);
    await new Promise<void>((resolve) => proxy.server.listen(0, '127.0.0.1', resolve));
    proxy.port = (proxy.server.address() as net.AddressInfo).port;
    return proxy;
  }

  /** How many connections through the proxy go to `port` now. */
  connectionsTo(port: number): number {
    return [...this.upstreams.values()].filter((p) => p === port).length;
  }

  /**
   * Cut every connection through it now, both ways and without a goodbye, as
   * a network loss does (the proxy keeps listening; `targets()` decides where
   * new connections go).
   */
  cutAll(): void {
    for (const socket of this.sockets) socket.destroy();
  }

  /** {@link cutAll}, and refuse new connections until {@link unblock}. */
  block(): void {
    this.isBlocked = true;
    this.cutAll();
  }

  unblock(): void {
    this.isBlocked = false;
  }

  /**
   * Keep what upstreams send to their clients from now on, in order, until
   * {@link release}: one direction of every connection goes slow (a late
   * notice), nothing is lost, and the other direction still flows.
   */
  hold(): void {
    this.held ??= [];
  }

  /** Pass on everything held, in order, and stop holding. */
  release(): void {
    const held = this.held ?? [];
    this.held = null;
    for (const { client, chunk } of held) if (!client.destroyed) client.write(chunk);
  }

  /** Resolves once the bytes held so far contain `text` (a frame of the protocol the proxy carries). */
  async untilHeld(text: string, ms = 5000): Promise<void> {
    const isHeld = () => this.held !== null && Buffer.concat(this.held.map((one) => one.chunk)).includes(text);
    if (isHeld()) return;
    let waiter = (): void => undefined;
    let timer: NodeJS.Timeout | undefined;
    try {
      await new Promise<void>((resolve, reject) => {
        waiter = () => isHeld() && resolve();
        this.heldWaiters.add(waiter);
        timer = setTimeout(() => reject(new Error(`the proxy held no "${text}" within ${ms} ms`)), ms);
      });
    } finally {
      this.heldWaiters.delete(waiter);
      clearTimeout(timer);
    }
  }

  /** Stop listening and cut every connection through it. */
  async close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.cutAll();
    await closed;
  }

  private toClient(client: net.Socket, chunk: Buffer): void {
    if (this.held === null) return void client.write(chunk);
    this.held.push({ client, chunk });
    for (const waiter of [...this.heldWaiters]) waiter();
  }

  private track(socket: net.Socket): void {
    this.sockets.add(socket);
    socket.once('close', () => this.sockets.delete(socket));
  }

  private accept(client: net.Socket): void {
    if (this.isBlocked) return void client.destroy();
    this.track(client);
    client.pause();
    client.on('error', () => client.destroy());
    const ports = this.targets();
    const attempt = (i: number): void => {
      if (i >= ports.length || client.destroyed) return void client.destroy();
      const upstream = net.connect(ports[i], '127.0.0.1');
      this.track(upstream);
      upstream.once('error', () => {
        upstream.destroy();
        attempt(i + 1);
      });
      upstream.once('connect', () => {
        this.upstreams.set(upstream, ports[i]);
        upstream.once('close', () => this.upstreams.delete(upstream));
        upstream.removeAllListeners('error');
        upstream.on('error', () => client.destroy());
        upstream.on('close', () => client.destroy());
        client.on('close', () => upstream.destroy());
        client.pipe(upstream);
        // Not a pipe this way: its bytes may be held (no backpressure: a test's volumes are small).
        upstream.on('data', (chunk: Buffer) => this.toClient(client, chunk));
        client.resume();
      });
    };
    attempt(0);
  }
}
