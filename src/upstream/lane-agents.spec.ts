import * as http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { LaneAgents, createLaneAgents } from './lane-agents';

/** A real HTTP server that holds every answer until released and counts the TCP connections it accepts. */
class HoldingServer {
  accepted = 0;
  readonly open = new Set<Socket>();
  private readonly held: http.ServerResponse[] = [];
  private arrivals: { count: number; resolve: () => void } | null = null;
  private closes: { count: number; resolve: () => void } | null = null;
  private readonly server = http.createServer((req, res) => {
    req.resume();
    this.held.push(res);
    if (this.arrivals !== null && this.held.length >= this.arrivals.count) this.arrivals.resolve();
  });
  port = 0;

  async start(): Promise<void> {
    // Idle connections close only when the agents close them, not on the server's 5 s default.
    this.server.keepAliveTimeout = 60_000;
    this.server.on('connection', (socket: Socket) => {
      this.accepted++;
      this.open.add(socket);
      socket.on('close', () => {
        this.open.delete(socket);
        if (this.closes !== null && this.open.size <= this.closes.count) this.closes.resolve();
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
  }

  /** Resolves once `count` requests are held. */
  untilHeld(count: number): Promise<void> {
    if (this.held.length >= count) return Promise.resolve();
    return new Promise((resolve) => (this.arrivals = { count, resolve }));
  }

  /** Resolves once at most `count` connections are open. */
  untilOpenAtMost(count: number): Promise<void> {
    if (this.open.size <= count) return Promise.resolve();
    return new Promise((resolve) => (this.closes = { count, resolve }));
  }

  /** Answer the oldest held request (all of them when `count` is not given). */
  release(count = this.held.length): void {
    for (const res of this.held.splice(0, count)) res.end('{}');
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

/**
 * POST through `agent`; resolves once the answer was read and the agent has taken its socket back
 * (true), or on a failed exchange (false: never a rejection left unawaited by a failed test).
 */
function post(agent: http.Agent, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const req = http.request({ agent, host: '127.0.0.1', port, method: 'POST', path: '/' }, (res) => {
      res.resume();
      // The agent frees the socket on the tick after 'end'.
      res.on('end', () => setImmediate(resolve, true));
    });
    req.on('error', () => resolve(false));
    req.end('[]');
  });
}

/** Idle sockets of `agent` still open. */
function idle(agent: http.Agent): number {
  return Object.values(agent.freeSockets).reduce((n, list) => n + list!.filter((s) => !s.destroyed).length, 0);
}

describe(createLaneAgents.name, () => {
  let server: HoldingServer;
  let agents: LaneAgents;
  beforeEach(async () => {
    server = new HoldingServer();
    await server.start();
  });
  afterEach(async () => {
    server.release(); // what a failed test left held
    for (const agent of agents) agent.destroy();
    await server.close();
  });

  /** `count` requests through `agent` held at once, then answered; resolves when all are back. */
  async function burst(agent: http.Agent, count: number): Promise<void> {
    const done = Array.from({ length: count }, () => post(agent, server.port));
    await server.untilHeld(count);
    server.release();
    expect(await Promise.all(done)).toEqual(done.map(() => true));
  }

  it('keeps every socket of a burst of authorizations for the next burst, within the bound', async () => {
    agents = createLaneAgents(
      false,
      20,
      { maxSockets: 20, maxFreeSockets: 20 },
      { maxSockets: 17, maxFreeSockets: 17 },
    );
    await burst(agents[0], 16);
    expect(idle(agents[0])).toBe(16);
    await burst(agents[0], 16);
    expect(server.accepted).toBe(16);
  });

  it("closes the other lane's least recently used idle socket to keep a freed one within the bound", async () => {
    agents = createLaneAgents(false, 4, { maxSockets: 4, maxFreeSockets: 4 }, { maxSockets: 2, maxFreeSockets: 2 });
    await burst(agents[0], 4);
    await burst(agents[1], 1);
    expect([idle(agents[0]), idle(agents[1])]).toEqual([3, 1]);
    await server.untilOpenAtMost(4);
    expect(server.accepted).toBe(5);
  });

  it('closes the freed socket itself when the other lane has no idle socket to give up', async () => {
    agents = createLaneAgents(false, 2, { maxSockets: 2, maxFreeSockets: 2 }, { maxSockets: 1, maxFreeSockets: 1 });
    const call = post(agents[1], server.port);
    await server.untilHeld(1);
    const auths = [post(agents[0], server.port), post(agents[0], server.port)];
    await server.untilHeld(3);
    server.release(1);
    expect(await call).toBe(true);
    expect(idle(agents[1])).toBe(0);
    await server.untilOpenAtMost(2);
    server.release();
    expect(await Promise.all(auths)).toEqual([true, true]);
    expect([idle(agents[0]), idle(agents[1]), server.open.size]).toEqual([2, 0, 2]);
  });
});
