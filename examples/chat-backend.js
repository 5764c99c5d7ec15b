'use strict';
/**
 * A tiny example backend for the gateway demo (plain Node, no dependencies).
 *
 * - authorizes any connection whose query string carries ?user=<name>
 * - answers `echo` with its arguments
 * - chat.join [room]: subscribes the caller to topic rooms/<room> and to the
 *   lattice namespace `rooms` (with a private entry so it sees the room's counter)
 * - chat.send [room, text]: publishes {user, text} to the room and bumps the
 *   room's last_message_counter in the `rooms` lattice
 */
const http = require('node:http');

const NAME = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * Start the backend; resolves the listening http.Server (with `port: 0`, read
 * the chosen port from `server.address().port`). `apiUrl` is the gateway's
 * internal listener: a string, or a function returning it, for when the
 * gateway is started after the backend and its port is known only then.
 */
function startChatBackend({ port = 9000, host = '127.0.0.1', apiUrl, apiToken } = {}) {
  const apiBase = typeof apiUrl === 'function' ? apiUrl : () => apiUrl;
  const counters = new Map();
  const api = (method, path, body) =>
    fetch(apiBase() + path, {
      method,
      headers: { ...(body === undefined ? {} : { 'Content-Type': 'application/json' }), ...(apiToken ? { Authorization: `Bearer ${apiToken}` } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    }).then((res) => {
      if (res.status !== 204) throw new Error(`${method} ${path} answered ${res.status}`);
    });

  const routes = {
    '/gateway/authorize_connection': async (meta, args, kwargs) => {
      const user = new URLSearchParams(kwargs.url_querystring || '').get('user');
      if (!user || !NAME.test(user)) return [401, { error: 'add ?user=<name> to the URL' }];
      return [200, { user_id: user, username: user }];
    },
    '/gateway/session_inactive': async () => [204, null],
    '/echo': async (meta, args, kwargs) => [200, { args, kwargs }],
    '/chat/join': async (meta, [room], kwargs, user) => {
      if (typeof room !== 'string' || !NAME.test(room)) return [400, { error: 'room must match [A-Za-z0-9_-]{1,64}' }];
      await api('PUT', `/v1/connection/${meta.connection_id}/subscriptions/rooms/${room}`);
      const lattice = { shared: { [room]: { last_message_counter: counters.get(room) || 0 } }, private: { [user]: { [room]: {} } } };
      await api('PUT', `/v1/connection/${meta.connection_id}/lattices/rooms`, lattice);
      return [200, { joined: room }];
    },
    '/chat/send': async (meta, [room, text], kwargs, user) => {
      if (typeof room !== 'string' || !NAME.test(room) || typeof text !== 'string') return [400, { error: 'chat.send takes [room, text]' }];
      const counter = (counters.get(room) || 0) + 1;
      counters.set(room, counter);
      await api('POST', `/v1/publish/rooms/${room}`, { user, text });
      await api('POST', '/v1/lattice/rooms', { shared: { [room]: { last_message_counter: counter } } });
      return [200, { sent: counter }];
    },
  };

  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', async () => {
      const route = routes[req.url.split('?')[0]];
      if (req.method !== 'POST' || !route) return reply(res, 404, { error: 'no such method' });
      try {
        const [meta, args, kwargs] = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        const [status, body] = await route(meta, args, kwargs, userOf(req.headers.authorization));
        reply(res, status, body);
      } catch (err) {
        reply(res, 500, { error: err.message });
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

function reply(res, status, body) {
  if (body === null) return res.writeHead(status).end();
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) }).end(text);
}

module.exports = { startChatBackend };
