import { loadConfig } from '../../../src/config/load-config';
import { JsonLogger } from '../../../src/logging/json-logger';
import { RunningGateway, startGateway } from '../../../src/start-gateway';
import { FakeUpstream } from './fake-upstream';
import { connectionIdOf } from './v1';
import { waitFor } from './wait';
import { Frame, WsClient } from './ws-client';

/** A started gateway with a fake upstream and the clients a test opened. */
export interface TestGateway {
  readonly gateway: RunningGateway;
  readonly upstream: FakeUpstream;
  /** ws://127.0.0.1:<public port> */
  readonly wsUrl: string;
  /** http://127.0.0.1:<public port> */
  readonly publicUrl: string;
  /** http://127.0.0.1:<internal port> */
  readonly apiUrl: string;
  /** Every log line the gateway wrote. */
  readonly logs: string[];
  /** Connect a client (closed by `close()`). */
  connect(options?: Parameters<typeof WsClient.connect>[1]): Promise<WsClient>;
  /** Connect and await hello. */
  hello(options?: Parameters<typeof WsClient.connect>[1]): Promise<{ client: WsClient; hello: Frame }>;
  /** The connection id of the next authorization request (with this raw query string, when given). */
  connectionIdOf(query?: string): Promise<string>;
  /** Connect as `user` (query `user=<user>` unless given), await hello, and learn the connection id. */
  helloAs(user: string, query?: string): Promise<{ client: WsClient; cid: string }>;
  /** The `gateway_connections` gauge read from GET /metrics (pending connections included). */
  openConnections(): Promise<number>;
  /** Resolve once `gateway_connections` equals `count`, within `ms`. */
  untilOpenConnections(count: number, ms?: number): Promise<void>;
  close(): Promise<void>;
}

/** YAML text of GATEWAY_CONFIG, or a function building it from the fake upstream's base URL. */
export type ConfigFileText = string | ((upstreamUrl: string) => string);

/**
 * Start the real app through the same startGateway as main.ts, both listeners
 * on port 0, with a real fake upstream (unless UPSTREAM_URL is given).
 * A `sharedUpstream` (several nodes of one cluster) is not closed by `close()`.
 */
export async function startTestGateway(
  env: Record<string, string> = {},
  fileText?: ConfigFileText,
  sharedUpstream?: FakeUpstream,
): Promise<TestGateway> {
  const upstream = sharedUpstream ?? (await FakeUpstream.start());
  try {
    return await startOn(upstream, sharedUpstream === undefined, env, fileText);
  } catch (err) {
    // A gateway that refused to start (a configuration error) leaves no upstream of its own running.
    if (sharedUpstream === undefined) await upstream.close();
    throw err;
  }
}

async function startOn(
  upstream: FakeUpstream,
  ownsUpstream: boolean,
  env: Record<string, string>,
  fileText: ConfigFileText | undefined,
): Promise<TestGateway> {
  const config = loadConfig(
    {
      HOST: '127.0.0.1',
      PORT: '0',
      BACKEND_API_HOST: '127.0.0.1',
      BACKEND_API_PORT: '0',
      LOG_LEVEL: 'debug',
      UPSTREAM_URL: upstream.url,
      ...env,
    },
    typeof fileText === 'function' ? fileText(upstream.url) : fileText,
  );
  const logs: string[] = [];
  const gateway = await startGateway(config, new JsonLogger(config.log.level, 'json', (line) => logs.push(line)));
  const clients: WsClient[] = [];
  const wsUrl = `ws://127.0.0.1:${gateway.publicAddress.port}`;
  const track = <T extends { client: WsClient } | WsClient>(value: T): T => {
    clients.push(value instanceof WsClient ? value : value.client);
    return value;
  };
  const apiUrl = `http://127.0.0.1:${gateway.internalAddress.port}`;
  const openConnections = async (): Promise<number> => {
    const text = await (await fetch(apiUrl + '/metrics')).text();
    const line = /^gateway_connections (\S+)$/m.exec(text);
    if (line === null) throw new Error('gateway_connections missing from /metrics');
    return Number(line[1]);
  };
  return {
    gateway,
    upstream,
    wsUrl,
    publicUrl: `http://127.0.0.1:${gateway.publicAddress.port}`,
    apiUrl,
    logs,
    connect: async (options) => track(await WsClient.connect(wsUrl, options)),
    hello: async (options) => track(await WsClient.hello(wsUrl, options)),
    connectionIdOf: (query) => connectionIdOf(upstream, query),
    helloAs: async (user, query = `user=${user}`) => {
      const { client } = track(await WsClient.hello(wsUrl, { query }));
      return { client, cid: await connectionIdOf(upstream, query) };
    },
    openConnections,
    untilOpenConnections: async (count, ms = 2000) => {
      let last = NaN;
      await waitFor(
        async () => (last = await openConnections()) === count,
        () => `gateway_connections ${count} (last ${last})`,
        ms,
        10,
      );
    },
    close: async () => {
      await Promise.all(clients.map((c) => c.close()));
      // The upstream goes first: requests it holds ('hang') then fail at once
      // instead of keeping the gateway's drain waiting for SHUTDOWN_GRACE.
      if (ownsUpstream) await upstream.close();
      await gateway.close();
    },
  };
}
