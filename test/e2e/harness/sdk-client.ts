/** Bounded, event-based waits on the client SDK (client/src), for e2e specs (STYLE B10). */
import WebSocket from 'ws';
import { GatewayClient, type ClientEvents, type ClientOptions, type WebSocketConstructor } from '../../../client/src';
import { within } from './wait';

/**
 * An SDK client in Node with `ws`, quick to reconnect (backoff 50..200 ms).
 * `closeAll()` closes every client made.
 */
export class SdkClients {
  private readonly clients: GatewayClient[] = [];

  create(url: string | (() => string), options: ClientOptions = {}): GatewayClient {
    const client = new GatewayClient(url, { WebSocket, backoff: { baseMs: 50, capMs: 200 }, ...options });
    this.clients.push(client);
    return client;
  }

  closeAll(): void {
    for (const client of this.clients.splice(0)) client.close();
  }
}

/** The next `event` of `client` (its arguments), within `ms`. */
export function nextEvent<E extends keyof ClientEvents>(
  client: GatewayClient,
  event: E,
  ms = 5000,
): Promise<ClientEvents[E]> {
  let remove = (): void => undefined;
  const happened = new Promise<ClientEvents[E]>((resolve) => {
    remove = client.on(event, (...args) => resolve(args));
  });
  return within(happened, `the client's '${event}' event (status ${client.status})`, ms).finally(remove);
}

/**
 * Resolve once `check()` holds, re-checked on every change of `subscribe`'s
 * source (e.g. a mirror's onChange), within `ms`; `describe()` says what was seen.
 */
export function untilChange(
  subscribe: (listener: () => void) => () => void,
  check: () => boolean,
  what: string,
  describe: () => unknown,
  ms = 5000,
): Promise<void> {
  if (check()) return Promise.resolve();
  let remove = (): void => undefined;
  const reached = new Promise<void>((resolve) => {
    remove = subscribe(() => {
      if (check()) resolve();
    });
  });
  return within(reached, what, ms)
    .catch((err: Error) => {
      throw new Error(`${err.message}; last seen: ${JSON.stringify(describe())}`);
    })
    .finally(remove);
}

/** Every message a client delivers on `topic`, and a bounded wait for the count to reach n. */
export interface CollectedMessages {
  readonly seen: unknown[];
  until(count: number, ms?: number): Promise<void>;
}

/** Collect what `client` delivers to the app on `topic` (registered through `onMessage`, like an app). */
export function collectMessages(client: GatewayClient, topic: string): CollectedMessages {
  const seen: unknown[] = [];
  const listeners = new Set<() => void>();
  client.onMessage(topic, (data) => {
    seen.push(data);
    for (const listener of [...listeners]) listener();
  });
  const subscribe = (listener: () => void): (() => void) => {
    listeners.add(listener);
    return () => void listeners.delete(listener);
  };
  return {
    seen,
    until: (count, ms = 5000) =>
      untilChange(
        subscribe,
        () => seen.length >= count,
        `${count} messages on ${topic}`,
        () => seen,
        ms,
      ),
  };
}

/**
 * The wire seen by SDK clients built with {@link WireLog.WebSocket}: the
 * subprotocols each socket offered and the frames it received, parsed.
 */
export class WireLog {
  readonly sockets: Array<{ readonly protocols: string[]; readonly frames: unknown[] }> = [];
  readonly WebSocket: WebSocketConstructor;

  constructor() {
    const sockets = this.sockets;
    this.WebSocket = class RecordingWebSocket extends WebSocket {
      constructor(url: string, protocols: string[]) {
        super(url, protocols);
        const frames: unknown[] = [];
        sockets.push({ protocols, frames });
        this.on('message', (data: Buffer) => frames.push(JSON.parse(data.toString('utf8'))));
      }
    };
  }

  /** The first frame (the hello) the `n`-th socket received. */
  helloOf(n: number): [string, Record<string, unknown>, unknown] {
    const hello = this.sockets[n]?.frames[0] as [string, Record<string, unknown>, unknown] | undefined;
    if (hello?.[0] !== 'hello') throw new Error(`socket ${n} got no hello: ${JSON.stringify(this.sockets[n])}`);
    return hello;
  }
}
