/** The client's options, events and statuses. */
import type { BackoffOptions } from './backoff';
import { isRetryableFatal, type FatalError } from './fatal-error';
import { PROTOCOLS, type Hello } from './frames';
import type { WebSocketConstructor } from './websocket-like';

export type ConnectionStatus = 'connecting' | 'connected' | 'reconnecting' | 'closed';

/** Options of {@link GatewayClient}; every one has a default. */
export interface ClientOptions {
  /** WebSocket implementation: default `globalThis.WebSocket`; in Node 20 pass the `ws` package's WebSocket. */
  readonly WebSocket?: WebSocketConstructor;
  /** Subprotocols offered, most preferred first (default {@link PROTOCOLS}). */
  readonly protocols?: readonly string[];
  /** Default `timeoutMs` of a call (30000). */
  readonly callTimeoutMs?: number;
  /** Time one attempt may take from opening the socket to `hello` (15000). */
  readonly connectTimeoutMs?: number;
  /** The gateway's PING_INTERVAL (10000): the watchdog reconnects after 3 silent intervals. */
  readonly pingIntervalMs?: number;
  /** Send a probe after a silent interval (true); turn off only where pings are seen (Node with `ws`). */
  readonly probe?: boolean;
  /** Reconnect delays (full jitter, first ≤ 1 s, cap 30 s). */
  readonly backoff?: BackoffOptions;
  /** Reconnect after a lost connection (true). */
  readonly reconnect?: boolean;
  /** Whether to reconnect after a fatal_error; default: every code but 4401 and 4403. */
  readonly retryFatal?: (error: FatalError) => boolean;
  /**
   * Ask for a resumable session (SPEC §12, true): after a lost connection the
   * client resumes it within the gateway's window, keeping its connection id,
   * subscriptions and the messages it missed (`resumed`); false speaks the lattice protocol alone.
   */
  readonly resume?: boolean;
  /** Random numbers in [0, 1) for the jitter (Math.random). */
  readonly random?: () => number;
}

/** A lost connection: why, and when the next attempt comes (null: the client stopped). */
export interface Disconnect {
  readonly code: number;
  readonly reason: string;
  readonly fatal: FatalError | null;
  readonly retryInMs: number | null;
}

/** A resumed session (SPEC §12.3). */
export interface Resumed {
  /**
   * Topics (dotted) whose missed messages the gateway could no longer replay:
   * refetch their state. `[]`: every missed message follows, through `onMessage`.
   */
  readonly lost: readonly string[];
  /**
   * How many missed messages the gateway replays now, before live traffic,
   * through `onMessage` (0: nothing was missed); null when the gateway did
   * not say (one older than this client). A replayed message the client had
   * already delivered is dropped, not delivered twice.
   */
  readonly replayed: number | null;
}

/** Events and their arguments. */
export interface ClientEvents {
  status: [status: ConnectionStatus];
  hello: [hello: Hello];
  /** A new session said hello after an earlier one was lost: the server side starts afresh, subscribe again. */
  reconnected: [hello: Hello];
  /** The session was resumed on a new connection: subscriptions kept, missed messages follow (except `lost` topics'). */
  resumed: [info: Resumed];
  /** SPEC §14: the backend refreshed the authorization with a changed identity (now `client.hello`); same user. */
  refreshed: [hello: Hello];
  disconnect: [info: Disconnect];
}

/** Options with every default filled in. */
export type Settings = Required<Omit<ClientOptions, 'backoff'>> & { backoff: BackoffOptions };

/** Fill in the defaults; throws a TypeError when no WebSocket implementation can be found. */
export function settingsOf(options: ClientOptions): Settings {
  const WebSocket = options.WebSocket ?? (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
  if (WebSocket === undefined)
    throw new TypeError(
      'no WebSocket implementation: pass options.WebSocket (in Node 20: the default export of the ws package)',
    );
  return {
    WebSocket,
    protocols: options.protocols ?? PROTOCOLS,
    callTimeoutMs: options.callTimeoutMs ?? 30_000,
    connectTimeoutMs: options.connectTimeoutMs ?? 15_000,
    pingIntervalMs: options.pingIntervalMs ?? 10_000,
    probe: options.probe ?? true,
    backoff: options.backoff ?? {},
    reconnect: options.reconnect ?? true,
    retryFatal: options.retryFatal ?? isRetryableFatal,
    resume: options.resume ?? true,
    random: options.random ?? Math.random,
  };
}
