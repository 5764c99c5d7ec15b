/**
 * The client: one WebSocket at a time to the gateway, reconnected with
 * backoff; calls, topic handlers and lattice mirrors that outlive reconnects.
 */
import { backoffDelayMs } from './backoff';
import { callError } from './call-error';
import {
  settingsOf,
  type ClientEvents,
  type ClientOptions,
  type ConnectionStatus,
  type Settings,
} from './client-options';
import { ConnectionClosedError } from './closed-error';
import { CLOSE_SERVICE_RESTART, FatalError, REASON_EXPIRED, RESTART_JITTER_MS, STOP_CLOSE_CODES } from './fatal-error';
import { encodeCall, parseServerFrame, PROBE_METHOD, type Hello, type HelloMeta, type MessagePosition } from './frames';
import { LatticeMirror } from './lattice-mirror';
import { Listeners } from './listeners';
import { PendingCalls, type CallOptions } from './pending-calls';
import { ResumeSession } from './resume-session';
import { USERS_NAMESPACE, UsersMirror } from './users-mirror';
import { Watchdog } from './watchdog';
import type { WebSocketLike } from './websocket-like';

/**
 * A connection to the gateway that keeps itself up: `connect()` once, then
 * `call()`, `onMessage()`, `lattice()` and `users()` work across reconnects.
 * Errors are values: calls reject with a CallError, connect() with a
 * FatalError or ConnectionClosedError; nothing is thrown from frame handling.
 */
export class GatewayClient {
  private readonly settings: Settings;
  private readonly calls = new PendingCalls();
  private readonly topics = new Map<string, Listeners<[data: unknown, topic: string]>>();
  private readonly mirrors = new Map<string, LatticeMirror>();
  private readonly usersMirror = new UsersMirror();
  private readonly watchdog: Watchdog;
  private readonly session: ResumeSession;
  private readonly events: { [E in keyof ClientEvents]: Listeners<ClientEvents[E]> } = {
    status: new Listeners(),
    hello: new Listeners(),
    reconnected: new Listeners(),
    resumed: new Listeners(),
    refreshed: new Listeners(),
    disconnect: new Listeners(),
  };
  private readonly waiters: Array<{ resolve: (hello: Hello) => void; reject: (error: Error) => void }> = [];
  private currentStatus: ConnectionStatus = 'closed';
  private currentHello: Hello | null = null;
  private socket: WebSocketLike | null = null;
  private isStopped = true;
  private hasHadHello = false;
  /** Failed attempts since the last hello: the backoff exponent. */
  private attempt = 0;
  private connectTimer: ReturnType<typeof setTimeout> | null = null;
  private retryTimer: ReturnType<typeof setTimeout> | null = null;
  private fatalFrame: { errorKind: string; status: number | null; data: unknown } | null = null;
  private lastFatal: FatalError | null = null;
  private probes = 0;
  /** SPEC §14: the attempt under way follows an `expired` close; a refusal of it stops the client. */
  private isAfterExpiry = false;

  /** `url` may be a function, called before every attempt (e.g. to put a fresh token in the query). */
  constructor(
    private readonly url: string | (() => string),
    options: ClientOptions = {},
  ) {
    this.settings = settingsOf(options);
    this.session = new ResumeSession(this.settings.resume);
    const { pingIntervalMs, probe } = this.settings;
    this.watchdog = new Watchdog(
      pingIntervalMs,
      probe,
      () => this.sendProbe(),
      () => this.abandon('no traffic for 3 ping intervals'),
    );
    this.mirrors.set(USERS_NAMESPACE, this.usersMirror.lattice);
  }

  get status(): ConnectionStatus {
    return this.currentStatus;
  }

  /** The subprotocol the gateway accepted on the current connection ('' when there is none). */
  get protocol(): string {
    return this.currentStatus === 'connected' ? (this.socket?.protocol ?? '') : '';
  }

  /** The latest hello (kept while reconnecting), null before the first. */
  get hello(): Hello | null {
    return this.currentHello;
  }

  /**
   * Start connecting (if stopped) and resolve with the next `hello`. Failed
   * attempts are retried with backoff while the policy allows; rejects with
   * a {@link FatalError} (close code 4000+S, the backend's data) when the
   * gateway refused for good, or a {@link ConnectionClosedError} when the
   * client stopped otherwise. After a refusal, calling it again retries.
   */
  connect(): Promise<Hello> {
    if (this.currentStatus === 'connected' && this.currentHello !== null) return Promise.resolve(this.currentHello);
    const hello = new Promise<Hello>((resolve, reject) => this.waiters.push({ resolve, reject }));
    if (this.isStopped) {
      this.isStopped = false;
      this.attempt = 0;
      this.setStatus(this.hasHadHello ? 'reconnecting' : 'connecting');
      this.open();
    }
    return hello;
  }

  /**
   * Stop: close the socket (a goodbye: the gateway ends the session), settle
   * every call with `connection_lost`, status `closed`. Nothing reaches the app after it.
   */
  close(): void {
    this.session.end();
    if (!this.isStopped) this.stop(null, new ConnectionClosedError(1000, 'closed by the client'));
  }

  /**
   * Call `method` (a backend method, e.g. `chat.send`) and resolve its result.
   * Made while not connected, it waits for the next hello, bounded by its
   * timeout. Rejects with a {@link CallError}.
   */
  call<R = unknown>(
    method: string,
    args: readonly unknown[] = [],
    kwargs: Readonly<Record<string, unknown>> = {},
    options: CallOptions = {},
  ): Promise<R> {
    if (this.isStopped)
      return Promise.reject(callError(method, { kind: 'connection_lost', sent: false, fatal: this.lastFatal }));
    const { call, promise } = this.calls.add<R>(method, args, kwargs, options, this.settings.callTimeoutMs);
    if (call !== null && this.currentStatus === 'connected') {
      call.isSent = true;
      this.send(call.frame);
    }
    return promise;
  }

  /** Handle messages published to `topic` (dotted form, e.g. `rooms.lobby`); returns the unsubscribe function. */
  onMessage<T = unknown>(topic: string, handler: (data: T, topic: string) => void): () => void {
    let listeners = this.topics.get(topic);
    if (listeners === undefined) this.topics.set(topic, (listeners = new Listeners()));
    const remove = listeners.add(handler as (data: unknown, topic: string) => void);
    return () => {
      remove();
      if (listeners.size === 0 && this.topics.get(topic) === listeners) this.topics.delete(topic);
    };
  }

  /** The mirror of a lattice namespace (dotted form); it exists, and fills, from the first frame on. */
  lattice(namespace: string): LatticeMirror {
    let mirror = this.mirrors.get(namespace);
    if (mirror === undefined) this.mirrors.set(namespace, (mirror = new LatticeMirror(namespace)));
    return mirror;
  }

  /** The mirror of the users lattice `gateway.user`. */
  users(): UsersMirror {
    return this.usersMirror;
  }

  /** Listen to an event; returns the remover. */
  on<E extends keyof ClientEvents>(event: E, listener: (...args: ClientEvents[E]) => void): () => void {
    return (this.events[event] as Listeners<ClientEvents[E]>).add(listener);
  }

  private open(): void {
    this.retryTimer = null;
    this.fatalFrame = null;
    let socket: WebSocketLike;
    try {
      const url = typeof this.url === 'function' ? this.url() : this.url;
      socket = new this.settings.WebSocket(
        url,
        this.session.protocolsAt(Date.now(), this.settings.protocols),
      ) as WebSocketLike;
    } catch (err) {
      return this.lost(1006, err instanceof Error ? err.message : String(err));
    }
    this.socket = socket;
    const isCurrent = (): boolean => this.socket === socket;
    socket.onmessage = (event) => {
      if (isCurrent()) this.onFrame(isCurrent, event.data);
    };
    socket.onclose = (event) => {
      if (this.socket === socket) this.lost(event.code, event.reason);
    };
    socket.onerror = () => undefined; // a close event follows
    // Node's `ws` shows pings: they count as traffic for the watchdog. Browsers never see them.
    socket.on?.('ping', () => {
      if (this.socket === socket) this.watchdog.seen();
    });
    this.connectTimer = setTimeout(() => this.abandon('connect timeout'), this.settings.connectTimeoutMs);
  }

  /** One frame of the current socket; `isCurrent()` turns false once the socket is replaced or the client closed. */
  private onFrame(isCurrent: () => boolean, data: unknown): void {
    if (typeof data !== 'string') return;
    this.watchdog.seen();
    const frame = parseServerFrame(data);
    switch (frame.type) {
      case 'hello':
        return this.onHello(frame.hello, frame.meta);
      case 'refreshed':
        return this.onRefreshed(frame.hello);
      // Calls have number ids; probes have string ids ("probe-N"), and their replies only count as traffic.
      case 'result':
        if (typeof frame.requestId === 'number') this.calls.resolve(frame.requestId, frame.data);
        return;
      case 'error':
        if (typeof frame.requestId === 'number') this.calls.reject(frame.requestId, frame.error);
        return;
      case 'message':
        return this.deliver(isCurrent, frame.topic, frame.data, frame.position);
      case 'lattice':
        return void this.lattice(frame.namespace).merge(frame.data);
      case 'fatal_error':
        this.fatalFrame = { errorKind: frame.errorKind, status: frame.status, data: frame.data };
        return;
      case 'unknown':
        return;
    }
  }

  /**
   * SPEC §12.7: the topic's position advances before any handler runs; a
   * replayed message already delivered is dropped; once the socket is
   * replaced or the client closed (by a handler, too), nothing more is delivered.
   */
  private deliver(isCurrent: () => boolean, topic: string, data: unknown, position: MessagePosition | null): void {
    if (!this.session.received(topic, position)) return;
    this.topics.get(topic)?.emitWhile(isCurrent, data, topic);
  }

  private onHello(hello: Hello, meta: HelloMeta): void {
    this.clearConnectTimer();
    const isReconnect = this.hasHadHello;
    const isResumed = this.session.greeted(meta);
    this.hasHadHello = true;
    this.currentHello = hello;
    this.attempt = 0;
    this.isAfterExpiry = false;
    this.lastFatal = null;
    this.watchdog.start();
    this.setStatus('connected');
    for (const call of this.calls.takeQueued()) this.send(call.frame);
    for (const waiter of this.waiters.splice(0)) waiter.resolve(hello);
    this.events.hello.emit(hello);
    if (this.isStopped) return;
    if (isResumed) this.events.resumed.emit({ lost: meta.lost, replayed: meta.replayed });
    else if (isReconnect) this.events.reconnected.emit(hello);
  }

  /** SPEC §14: a changed identity for the same user becomes the hello; the session goes on. */
  private onRefreshed(hello: Hello): void {
    if (this.currentHello === null || hello.user_id !== this.currentHello.user_id) return;
    this.currentHello = hello;
    this.events.refreshed.emit(hello);
  }

  /** The connection ended (close event, or abandoned): retry or stop. */
  private lost(code: number, reason: string): void {
    this.socket = null;
    this.clearConnectTimer();
    this.watchdog.stop();
    this.session.lost(Date.now());
    const fatal = this.fatalFrame === null ? null : this.fatalOf(code);
    this.fatalFrame = null;
    this.lastFatal = fatal;
    this.calls.loseSent(fatal);
    // 4403 disconnected, 4409 session_resumed: the session is over or elsewhere, so is this client.
    const isSessionOver = fatal === null && STOP_CLOSE_CODES.includes(code);
    if (isSessionOver) this.session.end();
    // SPEC §14: an expired session is over; one normal connect follows (the app's cookies decide), never a loop.
    const isExpired = code >= 4000 && reason === REASON_EXPIRED;
    const wasAfterExpiry = this.isAfterExpiry;
    this.isAfterExpiry = isExpired && !wasAfterExpiry;
    if (isExpired) this.session.end();
    if (this.settings.reconnect && this.isAfterExpiry) {
      this.retryTimer = setTimeout(() => this.open(), 0);
      this.setStatus('reconnecting');
      return this.events.disconnect.emit({ code, reason, fatal, retryInMs: 0 });
    }
    const shouldRetry =
      this.settings.reconnect &&
      !isSessionOver &&
      (fatal === null || (!wasAfterExpiry && this.settings.retryFatal(fatal)));
    if (!shouldRetry) {
      this.stop(fatal, fatal ?? new ConnectionClosedError(code, reason));
      return this.events.disconnect.emit({ code, reason, fatal, retryInMs: null });
    }
    // SPEC §12.5: a restarting gateway has detached the session; come back at once, spread by a jitter.
    const isRestart = fatal === null && code === CLOSE_SERVICE_RESTART;
    const retryInMs = isRestart
      ? Math.floor(this.settings.random() * RESTART_JITTER_MS)
      : backoffDelayMs(this.attempt++, this.settings.random, this.settings.backoff);
    this.retryTimer = setTimeout(() => this.open(), retryInMs);
    this.setStatus(this.hasHadHello ? 'reconnecting' : 'connecting');
    this.events.disconnect.emit({ code, reason, fatal, retryInMs });
  }

  private fatalOf(code: number): FatalError {
    const { errorKind, status, data } = this.fatalFrame!;
    // SPEC §3: close 4000+S follows the frame; trust the frame if the close code got lost (1006).
    const closeCode = code >= 4000 || status === null ? code : 4000 + status;
    return new FatalError(closeCode, errorKind, status, data);
  }

  /** Give up on the current socket without waiting for its close (connect timeout, watchdog). */
  private abandon(reason: string): void {
    const socket = this.socket;
    if (socket === null) return;
    this.socket = null;
    discard(socket, false);
    this.lost(1006, reason);
  }

  private stop(fatal: FatalError | null, error: Error): void {
    this.isStopped = true;
    this.clearConnectTimer();
    if (this.retryTimer !== null) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    this.watchdog.stop();
    if (this.socket !== null) discard(this.socket, true);
    this.socket = null;
    this.calls.loseAll(fatal);
    this.setStatus('closed');
    for (const waiter of this.waiters.splice(0)) waiter.reject(error);
  }

  private sendProbe(): void {
    this.send(encodeCall(PROBE_METHOD, `probe-${++this.probes}`, [], {}));
  }

  private send(frame: string): void {
    try {
      this.socket?.send(frame);
    } catch {
      // The socket is closing: its close event settles what was sent.
    }
  }

  private clearConnectTimer(): void {
    if (this.connectTimer !== null) clearTimeout(this.connectTimer);
    this.connectTimer = null;
  }

  private setStatus(status: ConnectionStatus): void {
    if (this.currentStatus === status) return;
    this.currentStatus = status;
    this.events.status.emit(status);
  }
}

/**
 * Detach from a socket and close it: with a close frame (1000) when the app
 * closes; a socket given up as dead is terminated where `ws` allows it, as
 * its closing handshake would only wait for a peer that is not answering.
 */
function discard(socket: WebSocketLike, isGraceful: boolean): void {
  socket.onmessage = null;
  socket.onclose = null;
  try {
    if (!isGraceful && socket.terminate !== undefined) socket.terminate();
    else socket.close(1000);
  } catch {
    // Already closed.
  }
}
