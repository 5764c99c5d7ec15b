/**
 * Typed client for the lattice gateway (swindon's lattice protocol, renamed
 * `gateway`): calls, pub/sub, lattice and presence mirrors, reconnects that resume the session.
 */
import type { ClientOptions } from './client-options';
import { GatewayClient } from './gateway-client';

export { GatewayClient } from './gateway-client';
export type { ClientEvents, ClientOptions, ConnectionStatus, Disconnect, Resumed } from './client-options';
export type { CallOptions } from './pending-calls';
export { callError, isCallError } from './call-error';
export type { CallError, CallErrorInfo, CallErrorKind } from './call-error';
export { FatalError, NO_RETRY_CLOSE_CODES, REASON_EXPIRED, STOP_CLOSE_CODES, isRetryableFatal } from './fatal-error';
export { ConnectionClosedError } from './closed-error';
export { PROTOCOLS, PROBE_METHOD } from './frames';
export { RESUME_SUBPROTOCOL } from './resume-offer';
export type { Hello } from './frames';
export { LatticeMirror } from './lattice-mirror';
export type { JsonValue, LatticeChange, LatticeValues, RegisterValue, VariableValue } from './lattice-mirror';
export { USERS_NAMESPACE, UsersMirror } from './users-mirror';
export type { PresenceStatus, UserPresence } from './users-mirror';
export { backoffDelayMs, DEFAULT_BACKOFF_BASE_MS, DEFAULT_BACKOFF_CAP_MS } from './backoff';
export type { BackoffOptions } from './backoff';
export type { WebSocketConstructor, WebSocketLike } from './websocket-like';

/**
 * A client for `url` (e.g. `wss://chat.example.com/?user=alice`); nothing is
 * opened until `connect()`. Register topic handlers and mirrors first: the
 * lattice snapshots follow `hello` at once.
 */
export function createClient(url: string | (() => string), options?: ClientOptions): GatewayClient {
  return new GatewayClient(url, options);
}
