import * as http from 'node:http';
import * as https from 'node:https';
import type { Duplex } from 'node:stream';

/** The keep-alive agents of one destination's two lanes, indexed by Lane (first lane, then calls). */
export type LaneAgents = readonly [http.Agent, http.Agent];

/** What each lane's agent may hold: busy sockets (`maxSockets`) and idle ones (`maxFreeSockets`). */
export interface LaneAgentOptions {
  readonly maxSockets: number;
  readonly maxFreeSockets: number;
}

/** An agent that keeps a freed socket only while its destination's open connections stay within the bound. */
interface BoundedAgent extends http.Agent {
  /** The other lane's agent of the same destination. */
  sibling: http.Agent | null;
  readonly maxOpen: number;
}

/**
 * A freed socket stays open (idle, for the next request) while the
 * destination's open connections, both lanes and busy ones included, are
 * within `maxOpen` (SPEC §1: UPSTREAM_MAX_SOCKETS keep-alive connections per
 * destination). Beyond it the other lane's least recently used idle socket
 * is closed in its place; with none, this one is. Each freed socket so brings
 * the count back toward the bound, and a burst of authorizations keeps the
 * connections it opened for the next burst instead of reopening them: a fixed
 * small idle cap on the first lane closed and reopened a TCP connection per
 * authorization beyond it (bench/RESULTS.md, session 13).
 */
function mayKeep(agent: BoundedAgent): boolean {
  if (agent.sibling === null || openSockets(agent) + openSockets(agent.sibling) <= agent.maxOpen) return true;
  return closeOldestIdle(agent.sibling);
}

class BoundedHttpAgent extends http.Agent implements BoundedAgent {
  sibling: http.Agent | null = null;

  constructor(
    options: http.AgentOptions,
    readonly maxOpen: number,
  ) {
    super(options);
  }

  override keepSocketAlive(socket: Duplex): boolean {
    // Node's own check (the server's Keep-Alive hint; typed void, it returns whether to keep) has the last word.
    return mayKeep(this) && (super.keepSocketAlive(socket) as unknown) !== false;
  }
}

class BoundedHttpsAgent extends https.Agent implements BoundedAgent {
  sibling: http.Agent | null = null;

  constructor(
    options: https.AgentOptions,
    readonly maxOpen: number,
  ) {
    super(options);
  }

  override keepSocketAlive(socket: Duplex): boolean {
    // Node's own check (the server's Keep-Alive hint; typed void, it returns whether to keep) has the last word.
    return mayKeep(this) && (super.keepSocketAlive(socket) as unknown) !== false;
  }
}

/** The two lanes' agents of a destination, open connections bounded by `maxOpen` together. */
export function createLaneAgents(
  isHttps: boolean,
  maxOpen: number,
  first: LaneAgentOptions,
  calls: LaneAgentOptions,
): LaneAgents {
  const Agent = isHttps ? BoundedHttpsAgent : BoundedHttpAgent;
  const agents = [
    new Agent({ keepAlive: true, ...first }, maxOpen),
    new Agent({ keepAlive: true, ...calls }, maxOpen),
  ] as const;
  agents[0].sibling = agents[1];
  agents[1].sibling = agents[0];
  return agents;
}

/** Sockets of `agent`, busy or idle (O(1): one destination, so one name in each list). */
function openSockets(agent: http.Agent): number {
  let count = 0;
  for (const name in agent.sockets) count += agent.sockets[name]!.length;
  for (const name in agent.freeSockets) count += agent.freeSockets[name]!.length;
  return count;
}

/**
 * Close `agent`'s least recently used idle socket, the front of its free list
 * (taken off it at once, so the next count is right); false when it has none.
 */
function closeOldestIdle(agent: http.Agent): boolean {
  for (const name in agent.freeSockets) {
    // Node's own lists; it takes a closed socket off them too, and finds this one gone already.
    const idle = (agent.freeSockets[name] as Duplex[]).shift();
    if (idle !== undefined) {
      idle.destroy();
      return true;
    }
  }
  return false;
}
