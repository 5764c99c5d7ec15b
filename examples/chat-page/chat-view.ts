/** The chat page's DOM: renders state, reports what the user does. No framework. */
import type { ConnectionStatus, Hello, UserPresence } from '../../client/src';

/** A chat message as the example backend publishes it. */
export interface ChatMessage {
  readonly id: number;
  readonly user: string;
  readonly text: string;
  readonly at: number;
}

const STATUS_TEXT: Record<ConnectionStatus, string> = {
  connecting: 'connecting…',
  connected: 'connected',
  reconnecting: 'reconnecting…',
  closed: 'not connected',
};
const PRESENCE_TEXT: Record<UserPresence['status'], string> = {
  active: 'online',
  inactive: 'away',
  offline: 'offline',
};
const PRESENCE_ORDER: Record<UserPresence['status'], number> = { active: 0, inactive: 1, offline: 2 };

export class ChatView {
  private readonly rendered = new Map<number, HTMLLIElement>();
  private room = '';
  private unread = 0;

  constructor(private readonly doc: Document) {}

  /** `handler(user, room)` on submit of the join form (prefilled from `?user=&room=`). */
  onJoin(handler: (user: string, room: string) => void): void {
    const params = new URLSearchParams(this.doc.location.search);
    this.input('user').value = params.get('user') ?? '';
    this.input('room').value = params.get('room') ?? 'lobby';
    this.on('join', 'submit', () => handler(this.input('user').value.trim(), this.input('room').value.trim()));
  }

  onSend(handler: (text: string) => void): void {
    this.on('composer', 'submit', () => {
      const text = this.input('text').value.trim();
      if (text !== '') handler(text);
    });
  }

  onRead(handler: () => void): void {
    this.el('unread').addEventListener('click', handler);
  }

  onLeave(handler: () => void): void {
    this.el('leave').addEventListener('click', handler);
  }

  clearComposer(): void {
    this.input('text').value = '';
  }

  setStatus(status: ConnectionStatus): void {
    const badge = this.el('status');
    badge.dataset.status = status;
    badge.textContent = STATUS_TEXT[status];
  }

  /**
   * Who the gateway says this page is (the hello, SPEC §3) and, when the
   * backend gives one, when its authorization ends (`expires_at`, epoch ms).
   * `isRenewal`: a refresh changed it (SPEC §14); the renewals are counted.
   */
  setIdentity(hello: Hello, isRenewal: boolean): void {
    const badge = this.el('identity');
    const expiresAt = typeof hello.expires_at === 'number' ? hello.expires_at : null;
    const renewals = isRenewal ? Number(badge.dataset.refreshes ?? '0') + 1 : 0;
    badge.dataset.refreshes = String(renewals);
    badge.dataset.expiresAt = expiresAt === null ? '' : String(expiresAt);
    const until = expiresAt === null ? '' : ` · signed in until ${clock(expiresAt)}`;
    badge.textContent = `${hello.user_id}${until}${renewals === 0 ? '' : ` (renewed ×${renewals})`}`;
    badge.hidden = false;
  }

  showJoin(error?: string): void {
    this.el('identity').hidden = true;
    this.el('chat').hidden = true;
    this.el('join').hidden = false;
    this.showError('join-error', error);
    this.doc.title = 'Lattice chat';
  }

  showChat(room: string): void {
    this.room = room;
    this.rendered.clear();
    this.el('messages').replaceChildren();
    this.el('members').replaceChildren();
    this.el('room-name').textContent = `#${room}`;
    this.el('join').hidden = true;
    this.el('chat').hidden = false;
    this.showError('chat-error');
    this.input('text').focus();
  }

  showChatError(error?: string): void {
    this.showError('chat-error', error);
  }

  /** Add messages not shown yet, in id order (a re-join after a reconnect brings the history again). */
  addMessages(messages: readonly ChatMessage[], me: string): void {
    const list = this.el('messages');
    for (const message of messages) {
      if (this.rendered.has(message.id)) continue;
      const item = this.messageItem(message, message.user === me);
      const next = [...this.rendered.entries()].filter(([id]) => id > message.id).sort(([a], [b]) => a - b)[0];
      list.insertBefore(item, next === undefined ? null : next[1]);
      this.rendered.set(message.id, item);
    }
    list.scrollTop = list.scrollHeight;
  }

  setMembers(people: readonly UserPresence[], me: string): void {
    const sorted = [...people].sort(
      (a, b) => PRESENCE_ORDER[a.status] - PRESENCE_ORDER[b.status] || a.userId.localeCompare(b.userId),
    );
    this.el('members').replaceChildren(
      ...sorted.map((person) => {
        const item = this.doc.createElement('li');
        item.dataset.user = person.userId;
        item.dataset.status = person.status;
        const name = this.doc.createElement('span');
        name.textContent = person.userId === me ? `${person.userId} (you)` : person.userId;
        const state = this.doc.createElement('span');
        state.className = 'state';
        state.textContent = PRESENCE_TEXT[person.status];
        item.append(name, state);
        return item;
      }),
    );
    this.el('online-count').textContent = `${people.filter((p) => p.status !== 'offline').length} online`;
  }

  setUnread(count: number): void {
    this.unread = count;
    const badge = this.el('unread');
    badge.dataset.count = String(count);
    badge.textContent = count === 0 ? 'all read' : `${count} unread`;
    this.doc.title = `${count === 0 ? '' : `(${count}) `}#${this.room} · Lattice chat`;
  }

  get unreadCount(): number {
    return this.unread;
  }

  private messageItem(message: ChatMessage, isMine: boolean): HTMLLIElement {
    const item = this.doc.createElement('li');
    item.className = isMine ? 'message mine' : 'message';
    item.dataset.id = String(message.id);
    const meta = this.doc.createElement('div');
    meta.className = 'meta';
    const author = this.doc.createElement('span');
    author.className = 'author';
    author.textContent = message.user;
    const time = this.doc.createElement('time');
    time.dateTime = new Date(message.at).toISOString();
    time.textContent = new Date(message.at).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
    meta.append(author, time);
    const text = this.doc.createElement('div');
    text.className = 'text';
    text.textContent = message.text;
    item.append(meta, text);
    return item;
  }

  private showError(id: string, error?: string): void {
    const line = this.el(id);
    line.hidden = error === undefined;
    line.textContent = error ?? '';
  }

  private on(id: string, event: 'submit', handler: () => void): void {
    this.el(id).addEventListener(event, (e) => {
      e.preventDefault();
      handler();
    });
  }

  private el(id: string): HTMLElement {
    const element = this.doc.getElementById(id);
    if (element === null) throw new Error(`#${id} is missing from the page`);
    return element;
  }

  private input(id: string): HTMLInputElement {
    return this.el(id) as HTMLInputElement;
  }
}

/** `HH:MM:SS` in the page's locale. */
function clock(atMs: number): string {
  return new Date(atMs).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' });
}
