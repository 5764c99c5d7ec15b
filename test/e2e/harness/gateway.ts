import { loadConfig } from '../../../src/config/load-config';
import { JsonLogger } from '../../../src/logging/json-logger';
import { RunningGateway, startGateway } from '../../../src/start-gateway';
import { FakeUpstream } from './fake-upstream';
import { WsClient } from './ws-client';

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
  hello(options?: Parameters<typeof WsClient.connect>[1]): Promise<{ client: WsClient; hello: unknown[] }>;
  close(): Promise<void>;
}

/**
 * Start the real app through the same startGateway as main.ts, both listeners
 * on port 0, with a real fake upstream (unless UPSTREAM_URL is given).
 */
export async function startTestGateway(env: Record<string, string> = {}, fileText?: string): Promise<TestGateway> {
  const upstream = await FakeUpstream.start();
  const config = loadConfig(
    { HOST: '127.0.0.1', PORT: '0', BACKEND_API_HOST: '127.0.0.1', BACKEND_API_PORT: '0', LOG_LEVEL: 'debug', UPSTREAM_URL: upstream.url, ...env },
    fileText,
  );
  const logs: string[] = [];
  const gateway = await startGateway(config, new JsonLogger(config.log.level, 'json', (line) => logs.push(line)));
  const clients: WsClient[] = [];
  const wsUrl = `ws://127.0.0.1:${gateway.publicAddress.port}`;
  const track = <T extends { client: WsClient } | WsClient>(value: T): T => {
    clients.push(value instanceof WsClient ? value : value.client);
    return value;
  };
  return {
    gateway,
    upstream,
    wsUrl,
    publicUrl: `http://127.0.0.1:${gateway.publicAddress.port}`,
    apiUrl: `http://127.0.0.1:${gateway.internalAddress.port}`,
    logs,
    connect: async (options) => track(await WsClient.connect(wsUrl, options)),
    hello: async (options) => track(await WsClient.hello(wsUrl, options)),
    close: async () => {
      await Promise.all(clients.map((c) => c.close()));
      await gateway.close();
      await upstream.close();
    },
  };
}
