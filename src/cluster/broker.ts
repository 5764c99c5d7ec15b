import type { LatticeBody } from '../lattice/lattice-body';

/**
 * Every state change a backend API call causes, as data (issue 4: one narrow
 * seam so a Redis broker can route commands between nodes, SPEC §11).
 */
export type BrokerCommand =
  | { readonly kind: 'topic_subscribe'; readonly connectionId: string; readonly topic: string }
  | { readonly kind: 'topic_unsubscribe'; readonly connectionId: string; readonly topic: string }
  | { readonly kind: 'publish'; readonly topic: string; readonly frame: Buffer }
  | { readonly kind: 'lattice_subscribe'; readonly connectionId: string; readonly namespace: string; readonly body: LatticeBody }
  | { readonly kind: 'lattice_unsubscribe'; readonly connectionId: string; readonly namespace: string }
  | { readonly kind: 'lattice_update'; readonly namespace: string; readonly body: LatticeBody }
  | { readonly kind: 'users_subscribe'; readonly connectionId: string; readonly userIds: readonly string[] }
  | { readonly kind: 'users_unsubscribe'; readonly connectionId: string }
  | { readonly kind: 'users_add'; readonly userId: string; readonly userIds: readonly string[] };

export type CommandKind = BrokerCommand['kind'];
export type CommandOf<K extends CommandKind> = Extract<BrokerCommand, { kind: K }>;
export type CommandHandler<K extends CommandKind> = (command: CommandOf<K>) => void;

/**
 * Carries commands to the node(s) that must apply them. Services register one
 * handler per kind (their local apply/deliver function) and dispatch through
 * the broker, so local and remote delivery share one path (STYLE B2).
 */
export abstract class Broker {
  abstract dispatch(command: BrokerCommand): Promise<void>;
  abstract handle<K extends CommandKind>(kind: K, handler: CommandHandler<K>): void;
}

/** Single node: every command is applied here, synchronously. */
export class MemoryBroker extends Broker {
  private readonly handlers = new Map<CommandKind, (command: BrokerCommand) => void>();

  dispatch(command: BrokerCommand): Promise<void> {
    const handler = this.handlers.get(command.kind);
    if (handler === undefined) throw new Error(`no handler for ${command.kind}`);
    handler(command);
    return Promise.resolve();
  }

  handle<K extends CommandKind>(kind: K, handler: CommandHandler<K>): void {
    this.handlers.set(kind, handler as (command: BrokerCommand) => void);
  }
}
