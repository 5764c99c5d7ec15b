/**
 * The part of a WebSocket the client uses: the browser's WebSocket and the
 * `ws` package both have it. Declared here so the client needs neither the
 * DOM library nor `ws` types.
 */
export interface WebSocketLike {
  /** The subprotocol the server accepted ('' before the handshake). */
  readonly protocol: string;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  onmessage: ((event: { readonly data: unknown }) => void) | null;
  onclose: ((event: { readonly code: number; readonly reason: string }) => void) | null;
  onerror: ((event: unknown) => void) | null;
  /** `ws` only: drop the TCP connection at once. */
  terminate?(): void;
  /** `ws` only (an EventEmitter): lets the client count pings as traffic. */
  on?(event: 'ping', listener: () => void): unknown;
}

/**
 * A WebSocket class: `globalThis.WebSocket` in browsers and Node 22, or the
 * `ws` package's default export. Typed loosely on purpose, so that either
 * can be passed without casts; the instance must have {@link WebSocketLike}'s members.
 */
export type WebSocketConstructor = new (url: string, protocols: string[]) => object;
