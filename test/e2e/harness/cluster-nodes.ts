import Redis from 'ioredis';
import { ChildGateway } from './child-gateway';
import { FakeUpstream } from './fake-upstream';
import { connectionIdOf } from './v1';
import { testShardsEnv } from './test-redis';
import { waitFor } from './wait';
import { Frame, WsClient } from './ws-client';

/** Generous for 2 busy CPUs: a child node boots dist/main.js. */
const START_MS = 15_000;

type Register = [number, string];

/**
 * Gateway nodes as child processes (`node dist/main.js`) on one Redis and one
 * fake upstream, for specs that kill, pause or restart them. Every process
 * and client it made is stopped by `close()`.
 */
export class ProcessCluster {
  readonly clients: WsClient[] = [];
  private readonly children: ChildGateway[] = [];

  constructor(
    readonly upstream: FakeUpstream,
    readonly redisUrl: string,
    readonly prefix: string,
    private readonly env: Record<string, string> = {},
  ) {}

  async start(nodeId: string): Promise<ChildGateway> {
    const child = await ChildGateway.start(
      {
        UPSTREAM_URL: this.upstream.url,
        REDIS_URL: this.redisUrl,
        ...testShardsEnv(),
        REDIS_PREFIX: this.prefix,
        NODE_ID: nodeId,
        LOG_LEVEL: 'info',
        SHUTDOWN_GRACE: '1s',
        ...this.env,
      },
      START_MS,
    );
    this.children.push(child);
    return child;
  }

  /** A client of `user` on `node`, with its connection id (read from the authorization request). */
  async hello(node: ChildGateway, user: string): Promise<{ client: WsClient; cid: string }> {
    const query = `user=${user}&at=${Math.random()}`;
    const { client } = await WsClient.hello(node.wsUrl, { query });
    this.clients.push(client);
    return { client, cid: await connectionIdOf(this.upstream, query) };
  }

  async close(): Promise<void> {
    await Promise.all(this.clients.splice(0).map((client) => client.close()));
    await Promise.all(this.children.splice(0).map((child) => child.stop()));
  }
}

/** Poll a node's /health/ready until its body reports `redis` as `state`. */
export async function untilRedisState(apiUrl: string, state: 'up' | 'down', ms = 10_000): Promise<void> {
  let body: { info?: { cluster?: { redis?: string } } } = {};
  await waitFor(
    async () => {
      body = (await (await fetch(apiUrl + '/health/ready')).json()) as typeof body;
      return body.info?.cluster?.redis === state;
    },
    () => `${apiUrl} to report redis ${state}: ${JSON.stringify(body)}`,
    ms,
    20,
  );
}

/** Poll `check` against Redis until it returns true, within `ms`. */
export async function untilRedisHas(
  redis: Redis,
  check: (redis: Redis) => Promise<boolean>,
  what: string,
  ms = 5000,
): Promise<void> {
  await waitFor(() => check(redis).catch(() => false), `${what} in Redis`, ms, 10);
}

/**
 * What a watcher's `gateway.user` frames say: the latest status register of
 * each user, and every register in arrival order. It reads the watcher's
 * frames (they must all be users lattice frames).
 */
export class StatusMirror {
  readonly latest = new Map<string, Register>();
  readonly seen: Array<[string, Register]> = [];

  constructor(private readonly client: WsClient) {}

  /** Read frames until `user` shows `status`, within `ms`; resolves the time it arrived. */
  async until(user: string, status: string, ms: number): Promise<number> {
    const deadline = Date.now() + ms;
    while (this.latest.get(user)?.[1] !== status) {
      const left = deadline - Date.now();
      if (left <= 0)
        throw new Error(
          `timed out after ${ms} ms waiting for ${user} to show ${status}; registers seen: ${JSON.stringify(this.seen)}`,
        );
      let frame: Frame;
      try {
        frame = await this.client.next(left);
      } catch {
        continue; // the deadline check above names what was missing
      }
      if (frame[0] !== 'lattice' || frame[1].namespace !== 'gateway.user')
        throw new Error(`not a users lattice frame: ${JSON.stringify(frame)}`);
      for (const [id, value] of Object.entries(frame[2] as Record<string, { status_register: Register }>)) {
        this.seen.push([id, value.status_register]);
        this.latest.set(id, value.status_register);
      }
    }
    return Date.now();
  }
}
