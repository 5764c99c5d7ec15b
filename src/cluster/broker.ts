import type { ChannelKind } from './channels';
import type { Moved, Whereabouts } from './whereabouts';

/**
 * How a command's data crosses nodes: to a JSON-able value and back. The
 * memory broker never calls it, so a single node pays nothing for it.
 */
export interface DataCodec<T> {
  encode(data: T): unknown;
  /** Throws on data that is not of the form `encode` produces (the command is then dropped). */
  decode(json: unknown): T;
}

/**
 * Applies one command on this node. `target` is the connection id (commands
 * to the owner) or the user id (commands to every node). The returned promise
 * resolves when the effect is in place, e.g. once a channel subscription is
 * acknowledged (SPEC §11 "read your writes").
 */
/**
 * Applies one command here. A command for a resumable session resolves to
 * {@link Moved} when the session's record says another node holds it now
 * (the broker sends the command there).
 */
export type CommandHandler<T> = (target: string, data: T) => void | Promise<void | Moved | undefined>;

/** Receives the payload of a channel message from another node. */
export type ChannelListener = (name: string, payload: Buffer) => void;

/**
 * Cluster mode, SPEC §12.5: where a connection is when it may have moved from
 * the node its id names (a resumable session taken over by another node).
 */
export interface ConnectionLocator {
  /** Whether this node holds the connection now (a map lookup: the common path pays nothing more). */
  isHere(connectionId: string): boolean;
  /** Where its session record says it is. */
  whereIs(connectionId: string): Promise<Whereabouts>;
  /**
   * Apply a command to an orphaned session (its record). Resolves to where the
   * session is afterwards: held by a node that took it meanwhile (the command
   * goes there), else applied (orphaned) or no such session (gone).
   */
  applyToRecord(kind: string, connectionId: string, data: unknown): Promise<Whereabouts>;
}

/**
 * The seam between features and the transport (STYLE B2). Features register
 * one handler per command kind and one listener per channel kind; commands are
 * data, so the cluster knows nothing of pub/sub, lattices or presence.
 *
 * - `toOwner`: run a command on the node that owns the connection.
 * - `toEveryNode`: run a command on every live node (e.g. endpoint 8).
 * - `join`/`leave`/`send`: data channels (topics, namespaces, users) that a
 *   node listens to only while it has local interest; `send` reaches the
 *   OTHER nodes that joined, the caller delivers to its own connections itself.
 */
export abstract class Broker {
  abstract handle<T>(kind: string, handler: CommandHandler<T>, codec?: DataCodec<T>): void;
  abstract toOwner<T>(kind: string, connectionId: string, data: T): Promise<void>;
  abstract toEveryNode<T>(kind: string, target: string, data: T): Promise<void>;
  /**
   * Run a command for connection `target` on node `nodeId` (the holder a
   * session record named), acked as `toOwner` is: 503 when that node is alive
   * but does not acknowledge within 5 s; resolved when it is gone.
   */
  abstract toNode<T>(kind: string, nodeId: string, target: string, data: T): Promise<void>;
  /** A notice for node `nodeId`, sent without waiting for an ack (e.g. a session taken from it, SPEC §12.5). */
  abstract notify<T>(kind: string, nodeId: string, target: string, data: T): void;
  abstract listen(kind: ChannelKind, listener: ChannelListener): void;
  /** Start listening to a channel; resolves once messages sent after it will arrive. */
  abstract join(kind: ChannelKind, name: string): Promise<void>;
  /** Stop listening (after a short delay that a new `join` cancels). */
  abstract leave(kind: ChannelKind, name: string): void;
  abstract send(kind: ChannelKind, name: string, payload: Buffer): void;
  /** Cluster mode: commands for a connection follow it to the node that holds it (SPEC §12.5). */
  locate(locator: ConnectionLocator): void {
    void locator;
  }
  /** Stop timers (app shutdown); nothing to stop on a single node. */
  stop(): void {
    // A single node's broker keeps no timers.
  }
}

/** Single node: every command is applied here; there is no other node to send to. */
export class MemoryBroker extends Broker {
  private readonly handlers = new Map<string, CommandHandler<unknown>>();

  handle<T>(kind: string, handler: CommandHandler<T>): void {
    this.handlers.set(kind, handler as CommandHandler<unknown>);
  }

  toOwner<T>(kind: string, connectionId: string, data: T): Promise<void> {
    return this.apply(kind, connectionId, data);
  }

  toEveryNode<T>(kind: string, target: string, data: T): Promise<void> {
    return this.apply(kind, target, data);
  }

  toNode<T>(kind: string, _nodeId: string, target: string, data: T): Promise<void> {
    return this.apply(kind, target, data);
  }

  notify<T>(kind: string, _nodeId: string, target: string, data: T): void {
    void this.apply(kind, target, data);
  }

  listen(): void {}

  join(): Promise<void> {
    return RESOLVED;
  }

  leave(): void {}

  send(): void {}

  private apply(kind: string, target: string, data: unknown): Promise<void> {
    const handler = this.handlers.get(kind);
    if (handler === undefined) throw new Error(`no handler for ${kind}`);
    const done = handler(target, data);
    // One node: no session moves, so no handler resolves to Moved here.
    return done === undefined ? RESOLVED : (done as Promise<void>);
  }
}

const RESOLVED = Promise.resolve();
