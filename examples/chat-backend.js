'use strict';
/**
 * A tiny example backend for the gateway demo (plain Node, no dependencies).
 *
 * - authorizes any connection whose query string carries ?user=<name>, and
 *   subscribes it to topic rooms/<room> in that answer when it carries ?room=<room>
 * - answers `echo` with its arguments
 * - chat.join [room]: subscribes the caller to topic rooms/<room>, to the
 *   lattice namespace `rooms` (the room's last_message_counter, and the
 *   caller's private last_seen_counter) and to the presence of the room's
 *   members (users lattice); tells the members about the newcomer; answers
 *   {joined, messages} with the room's recent messages
 * - chat.send [room, text]: publishes {id, user, text, at} to the room, bumps
 *   the room's last_message_counter and the sender's last_seen_counter
 * - chat.read [room, counter]: raises the caller's last_seen_counter
 * - GET / (and /app.js, /style.css): the chat page, when `page` is given
 * - with `authTtlSeconds`, authorizations last that long (`Gateway-Auth-TTL`,
 *   SPEC §14) and gateway.refresh_connection renews them while `isAllowed(user)`
 *   says so, else answers 401 (the gateway then ends the session, reason `expired`);
 *   the identity object then names its end (`expires_at`, epoch ms), so each
 *   renewal changes it: the page shows it, and later requests carry it
 */
const http = require('node:http');

const NAME = /^[A-Za-z0-9_-]{1,64}$/;
/** Messages a room keeps for members who join later. */
const HISTORY = 50;

/**
 * Start the backend; resolves the listening http.Server (with `port: 0`, read
 * the chosen port from `server.address().port`). `log` gets one line per
 * authorized connection with its connection_id (the `$CID` of the README's
 * `/v1` examples; default: none). `apiUrl` is the gateway's
 * internal listener: a string, or a function returning it, for when the
 * gateway is started after the backend and its port is known only then.
 * `page` (from examples/chat-page/build.js) and `gatewayPort` (a number or a
 * function of the page request's query, e.g. `?node=2`, returning it) serve
 * the chat page. `authTtlSeconds` (default: none, authorizations last as long
 * as their connection) and `isAllowed(user)` (default: everyone) drive SPEC §14.
 */
function startChatBackend({
  port = 9000,
  host = '127.0.0.1',
  apiUrl,
  apiToken,
  page,
  gatewayPort,
  log = () => undefined,
  authTtlSeconds,
  isAllowed = () => true,
} = {}) {
  // SPEC §14: a dedicated header sets the lifetime; without it the authorization lasts as long as the connection.
  const lifetime = authTtlSeconds === undefined ? {} : { 'Gateway-Auth-TTL': String(authTtlSeconds) };
  /** The identity object (SPEC §3); with a lifetime, its end too, so a renewal is a changed object (SPEC §14). */
  const identityOf = (user) =>
    authTtlSeconds === undefined
      ? { user_id: user, username: user }
      : { user_id: user, username: user, expires_at: Date.now() + authTtlSeconds * 1000 };
  const apiBase = typeof apiUrl === 'function' ? apiUrl : () => apiUrl;
  const portOfGateway = typeof gatewayPort === 'function' ? gatewayPort : () => gatewayPort;
  const rooms = new Map(); // room -> { counter, messages, members: Set<user> }
  const seen = new Map(); // `${user}/${room}` -> last seen counter
  const roomOf = (name) => {
    if (!rooms.has(name)) rooms.set(name, { counter: 0, messages: [], members: new Set() });
    return rooms.get(name);
  };
  const api = (method, path, body) =>
    fetch(apiBase() + path, {
      method,
      headers: {
        ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
        ...(apiToken ? { Authorization: `Bearer ${apiToken}` } : {}),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    }).then((res) => {
      if (res.status !== 204) throw new Error(`${method} ${path} answered ${res.status}`);
    });
  const isRoom = (room) => typeof room === 'string' && NAME.test(room);

  const routes = {
    '/gateway/authorize_connection': async (meta, args, kwargs) => {
      const query = new URLSearchParams(kwargs.url_querystring || '');
      const user = query.get('user');
      if (!user || !NAME.test(user)) return [401, { error: 'add ?user=<name> to the URL' }];
      // SPEC §3: the connection's id comes in the request's first element; /v1 commands name the connection by it.
      log(`connection authorized: user ${user}, connection_id ${meta.connection_id}`);
      // SPEC §15.1: the page's room (?room=) is subscribed by the answer itself, one round trip less than a /v1 PUT.
      const room = query.get('room');
      const subscribe = isRoom(room) ? { 'Gateway-Subscribe': `rooms/${room}` } : {};
      return [200, identityOf(user), { ...lifetime, ...subscribe }];
    },
    // SPEC §14: asked before the lifetime ends, with the connection's identity header (no cookie, no query).
    // 200 with the same user renews it; its new expires_at makes the object differ, so it becomes the identity
    // (resumable clients get ["hello", {"refreshed": true}, <object>]). 401/403/404/410 end the session.
    '/gateway/refresh_connection': async (meta, args, kwargs, user) => {
      if (!user || !isAllowed(user)) return [401, { error: 'signed out' }];
      return [200, identityOf(user), lifetime];
    },
    '/gateway/session_inactive': async () => [204, null],
    '/echo': async (meta, args, kwargs) => [200, { args, kwargs }],
    '/chat/join': async (meta, [room], kwargs, user) => {
      if (!isRoom(room)) return [400, { error: 'room must match [A-Za-z0-9_-]{1,64}' }];
      const state = roomOf(room);
      const key = `${user}/${room}`;
      // A first-time member has read what was said before: history is not "unread".
      if (!seen.has(key)) seen.set(key, state.counter);
      const cid = meta.connection_id;
      await api('PUT', `/v1/connection/${cid}/subscriptions/rooms/${room}`);
      const lattice = {
        shared: { [room]: { last_message_counter: state.counter } },
        private: { [user]: { [room]: { last_seen_counter: seen.get(key) } } },
      };
      await api('PUT', `/v1/connection/${cid}/lattices/rooms`, lattice);
      const isNewMember = !state.members.has(user);
      state.members.add(user);
      await api('PUT', `/v1/connection/${cid}/users`, [...state.members]);
      if (isNewMember) {
        for (const member of state.members) if (member !== user) await api('PUT', `/v1/user/${member}/users`, [user]);
      }
      return [200, { joined: room, messages: state.messages }];
    },
    '/chat/send': async (meta, [room, text], kwargs, user) => {
      if (!isRoom(room) || typeof text !== 'string' || text.length > 2000)
        return [400, { error: 'chat.send takes [room, text]' }];
      const state = roomOf(room);
      const message = { id: ++state.counter, user, text, at: Date.now() };
      state.messages = [...state.messages, message].slice(-HISTORY);
      seen.set(`${user}/${room}`, message.id);
      await api('POST', `/v1/publish/rooms/${room}`, message);
      await api('POST', '/v1/lattice/rooms', {
        shared: { [room]: { last_message_counter: message.id } },
        private: { [user]: { [room]: { last_seen_counter: message.id } } },
      });
      return [200, { sent: message.id }];
    },
    '/chat/read': async (meta, [room, counter], kwargs, user) => {
      if (!isRoom(room) || !Number.isSafeInteger(counter) || counter < 0)
        return [400, { error: 'chat.read takes [room, counter]' }];
      const key = `${user}/${room}`;
      const read = Math.max(seen.get(key) || 0, Math.min(counter, roomOf(room).counter));
      seen.set(key, read);
      await api('POST', '/v1/lattice/rooms', { private: { [user]: { [room]: { last_seen_counter: read } } } });
      return [200, { read }];
    },
  };

  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', async () => {
      // No request may bring the backend down: whatever throws is a 500.
      try {
        const [path, query] = req.url.split('?');
        if (req.method === 'GET' && page && page[path])
          return servePage(res, page[path], () => portOfGateway(new URLSearchParams(query ?? '')));
        const route = routes[path];
        if (req.method !== 'POST' || !route) return reply(res, 404, { error: 'no such method' });
        const [meta, args, kwargs] = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        const [status, body, headers] = await route(meta, args, kwargs, userOf(req.headers.authorization));
        reply(res, status, body, headers);
      } catch (err) {
        if (!res.headersSent) reply(res, 500, { error: err.message });
      }
    });
  });
  return new Promise((resolve) => server.listen(port, host, () => resolve(server)));
}

/** The user id from `Authorization: Gateway+json <base64 JSON>`. */
function userOf(header) {
  if (!header || !header.startsWith('Gateway+json ')) return null;
  return JSON.parse(Buffer.from(header.slice('Gateway+json '.length), 'base64').toString('utf8')).user_id;
}

function reply(res, status, body, headers = {}) {
  if (body === null) return res.writeHead(status).end();
  const text = JSON.stringify(body);
  res
    .writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text), ...headers })
    .end(text);
}

/** A page that names the gateway's port is served once that port is known; before, 503 with a retry hint. */
function servePage(res, file, gatewayPort) {
  let body = file.body;
  if (body.includes('{{GATEWAY_PORT}}')) {
    const port = gatewayPort();
    if (!Number.isInteger(port) || port <= 0) return serveStarting(res);
    body = body.replace('{{GATEWAY_PORT}}', String(port));
  }
  res
    .writeHead(200, {
      'Content-Type': file.type,
      'Content-Length': Buffer.byteLength(body),
      'Cache-Control': 'no-store',
    })
    .end(body);
}

/** The gateway has not started yet (the demo starts it after this backend): a browser reloads in a second. */
function serveStarting(res) {
  const body =
    '<!doctype html><meta http-equiv="refresh" content="1"><title>Starting</title><p>The gateway is starting; this page reloads in a second.</p>\n';
  res
    .writeHead(503, {
      'Content-Type': 'text/html; charset=utf-8',
      'Content-Length': Buffer.byteLength(body),
      'Retry-After': '1',
      'Cache-Control': 'no-store',
    })
    .end(body);
}

module.exports = { startChatBackend };
