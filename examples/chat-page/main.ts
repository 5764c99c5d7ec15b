/**
 * The demo chat page, built on the client SDK: join a room, send and see
 * messages, who is online (the users lattice), unread count (the `rooms` lattice).
 */
import { createClient, FatalError, isCallError } from '../../client/src';
import { ChatView, type ChatMessage } from './chat-view';

/** Seconds of activity a send or a read stands for (SPEC §8 `active`). */
const ACTIVE_SECONDS = 20;

interface JoinResult {
  readonly joined: string;
  readonly messages: readonly ChatMessage[];
}

/** What the buttons act on while a room is open. */
interface Session {
  send(text: string): void;
  read(): void;
  leave(): void;
}

const view = new ChatView(document);
let session: Session | null = null;

view.onJoin((user, room) => void join(user, room));
view.onSend((text) => session?.send(text));
view.onRead(() => session?.read());
view.onLeave(() => {
  session?.leave();
  view.showJoin();
});
document.addEventListener('visibilitychange', () => {
  if (document.visibilityState === 'visible' && view.unreadCount > 0) session?.read();
});

async function join(user: string, room: string): Promise<void> {
  session?.leave();
  const port = document.querySelector('meta[name="gateway-port"]')?.getAttribute('content') ?? '8080';
  const client = createClient(
    `ws://${location.hostname}:${port}/?user=${encodeURIComponent(user)}&room=${encodeURIComponent(room)}`,
  );
  const rooms = client.lattice('rooms');
  const users = client.users();
  const enter = async (): Promise<void> =>
    view.addMessages((await client.call<JoinResult>('chat.join', [room])).messages, user);
  const showUnread = (): void =>
    view.setUnread(Math.max(0, rooms.counter(room, 'last_message_counter') - rooms.counter(room, 'last_seen_counter')));
  const stops = [
    client.on('status', (status) => view.setStatus(status)),
    // Every hello (a reconnect may bring another object), and each renewal of the authorization (SPEC §14).
    client.on('hello', (hello) => view.setIdentity(hello, false)),
    client.on('refreshed', (hello) => view.setIdentity(hello, true)),
    client.onMessage<ChatMessage>(`rooms.${room}`, (message) => view.addMessages([message], user)),
    rooms.onChange((changes) => {
      if (changes.some((change) => change.key === room)) showUnread();
    }),
    users.onChange(() => view.setMembers(users.list(), user)),
    // A new session starts with no subscriptions: join again (the backend re-sends state).
    client.on('reconnected', () => void act(enter())),
    // A resumed session kept its subscriptions and gets the missed messages, unless the room's
    // history no longer had them: then load the room again (messages already shown are skipped).
    client.on('resumed', ({ lost }) => {
      if (lost.includes(`rooms.${room}`)) void act(enter());
    }),
  ];
  const current: Session = {
    send: (text) =>
      void act(client.call('chat.send', [room, text], {}, { active: ACTIVE_SECONDS }).then(() => view.clearComposer())),
    read: () =>
      void act(
        client.call('chat.read', [room, rooms.counter(room, 'last_message_counter')], {}, { active: ACTIVE_SECONDS }),
      ),
    leave: () => {
      for (const stop of stops) stop();
      client.close();
      if (session === current) session = null;
    },
  };
  session = current;

  try {
    await client.connect();
  } catch (err) {
    current.leave();
    return view.showJoin(describe(err));
  }
  view.showChat(room);
  view.setMembers(users.list(), user);
  showUnread();
  await act(enter());
}

/** Await a call; show its failure under the chat, clear the error line on success. */
async function act(call: Promise<unknown>): Promise<void> {
  try {
    await call;
    view.showChatError();
  } catch (err) {
    view.showChatError(describe(err));
  }
}

function describe(err: unknown): string {
  if (err instanceof FatalError) {
    const data = err.data as { error?: unknown } | null;
    return `The gateway refused the connection (${err.code})${typeof data?.error === 'string' ? `: ${data.error}` : ''}`;
  }
  if (isCallError(err)) {
    if (err.kind === 'connection_lost') return 'Connection lost: not sent.';
    if (err.kind === 'http_error') return `The backend answered ${err.status}.`;
    return `Failed: ${err.kind}.`;
  }
  return String(err);
}
