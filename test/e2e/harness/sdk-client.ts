/** Bounded, event-based waits on the client SDK (client/src), for e2e specs (STYLE B10). */
import WebSocket from 'ws';
import { GatewayClient, type ClientEvents, type ClientOptions } from '../../../client/src';
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
export function nextEvent<E extends keyof ClientEvents>(client: GatewayClient, event: E, ms = 5000): Promise<ClientEvents[E]> {
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
export function untilChange(subscribe: (listener: () => void) => () => void, check: () => boolean, what: string, describe: () => unknown, ms = 5000): Promise<void> {
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
