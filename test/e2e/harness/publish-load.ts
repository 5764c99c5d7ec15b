/** Publishing under faults, and what subscribers must have received of it (SPEC §11: every 204 once, in order per node). */

import { ChildGateway } from './child-gateway';
import { api } from './http';
import { Frame, WsClient } from './ws-client';

/** Between two publishes of the load (pacing a load generator, not a synchronisation). */
export const PUBLISH_GAP_MS = 20;

/** One publish of the load and its answer (0: no answer). */
export interface Published {
  readonly via: string;
  readonly seq: number;
  readonly status: number;
}

/**
 * Publishes `{via, seq}` to `topic` through each node in turn, one at a time
 * per node (so their order per node is defined, SPEC §11), until stopped.
 */
export function publishUntilStopped(
  nodes: ReadonlyArray<[string, ChildGateway]>,
  topic: string,
): { stop(): Promise<Published[]> } {
  const outcomes: Published[] = [];
  let isRunning = true;
  const loops = nodes.map(async ([via, node]) => {
    for (let seq = 1; isRunning; seq++) {
      const status = await api(node.apiUrl, 'POST', `/v1/publish/${topic}`, { via, seq }).then(
        (r) => r.status,
        () => 0,
      );
      outcomes.push({ via, seq, status });
      await new Promise((resolve) => setTimeout(resolve, PUBLISH_GAP_MS));
    }
  });
  return {
    stop: async () => {
      isRunning = false;
      await Promise.all(loops);
      return outcomes;
    },
  };
}

/** The `{via, seq}` payloads of `topic` a client received, in arrival order. */
export function loadReceived(client: WsClient, topic: string): Array<{ via: string; seq: number }> {
  return client.frames
    .filter((f: Frame) => f[0] === 'message' && f[1].topic === topic)
    .map((f) => f[2] as { via: string; seq: number });
}

/** Every acknowledged publish exactly once, and per publishing node in publish order; what a client missed or got twice. */
export function deliveryFaults(
  received: ReadonlyArray<{ via: string; seq: number }>,
  published: readonly Published[],
): string[] {
  const faults: string[] = [];
  const seen = new Set<string>();
  const lastSeq = new Map<string, number>();
  for (const { via, seq } of received) {
    if (seen.has(`${via}:${seq}`)) faults.push(`${via}:${seq} twice`);
    if ((lastSeq.get(via) ?? 0) > seq) faults.push(`${via}:${seq} after ${via}:${lastSeq.get(via)}`);
    seen.add(`${via}:${seq}`);
    lastSeq.set(via, seq);
  }
  for (const { via, seq } of published.filter((p) => p.status === 204))
    if (!seen.has(`${via}:${seq}`)) faults.push(`${via}:${seq} acknowledged, never received`);
  return faults;
}
