import { randomBytes } from 'node:crypto';
import { FakeUpstream } from './fake-upstream';
import { TestGateway, startTestGateway } from './gateway';
import { DEFAULT_TEST_REDIS_URL, testShardsEnv } from './test-redis';

/** Redis of the test run: TEST_REDIS_URL, else 6379; globalSetup starts a private one when none answers there. */
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? DEFAULT_TEST_REDIS_URL;

/** Several in-process nodes of one cluster on one Redis, sharing one fake upstream. */
export interface TestCluster {
  readonly nodes: TestGateway[];
  readonly upstream: FakeUpstream;
  /** REDIS_PREFIX of this cluster: random, so spec files can run in parallel. */
  readonly prefix: string;
  close(): Promise<void>;
}

/** A fresh REDIS_PREFIX. */
export function randomPrefix(): string {
  return `e2e:${randomBytes(6).toString('hex')}:`;
}

/**
 * Start `count` nodes (NODE_ID nodeA, nodeB, …) with a random REDIS_PREFIX,
 * through the same startGateway as main.ts.
 */
export async function startTestCluster(count: number, env: Record<string, string> = {}): Promise<TestCluster> {
  const upstream = await FakeUpstream.start();
  const prefix = env.REDIS_PREFIX ?? randomPrefix();
  const nodes: TestGateway[] = [];
  try {
    for (let i = 0; i < count; i++) {
      const nodeId = `node${String.fromCharCode(65 + i)}`;
      nodes.push(
        await startTestGateway(
          { REDIS_URL: TEST_REDIS_URL, ...testShardsEnv(), REDIS_PREFIX: prefix, NODE_ID: nodeId, ...env },
          undefined,
          upstream,
        ),
      );
    }
  } catch (err) {
    await Promise.all(nodes.map((node) => node.close()));
    await upstream.close();
    throw err;
  }
  return {
    nodes,
    upstream,
    prefix,
    close: async () => {
      await Promise.all(nodes.map((node) => node.close()));
      await upstream.close();
    },
  };
}

/**
 * Two nodes seen as one TestGateway: clients connect to node A, `/v1` calls
 * go to node B (`apiUrl`), so every command for a connection crosses nodes.
 */
export async function startTwoNodeGateway(env: Record<string, string> = {}): Promise<TestGateway> {
  const cluster = await startTestCluster(2, env);
  const [a, b] = cluster.nodes;
  return { ...a, apiUrl: b.apiUrl, close: () => cluster.close() };
}

/** How spec files run in both shapes (issue 10: the /v1 conformance rows, API on another node than the client). */
export const TOPOLOGIES: ReadonlyArray<[string, (env?: Record<string, string>) => Promise<TestGateway>]> = [
  ['one node', (env) => startTestGateway(env)],
  ['two nodes, /v1 on the other node', startTwoNodeGateway],
];
