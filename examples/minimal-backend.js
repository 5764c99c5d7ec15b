'use strict';
/**
 * The smallest useful backend for the gateway: Node.js only (node:http), no
 * dependencies. Run it, then the gateway against it:
 *
 *   node examples/minimal-backend.js            # listens on 127.0.0.1:9000 (PORT=... to change)
 *   UPSTREAM_URL=http://127.0.0.1:9000 npm start
 *
 * It answers the gateway's three kinds of request (docs/backend.md):
 * - POST /gateway/authorize_connection: lets in `?user=<name>` as user_id <name>
 * - POST /gateway/session_inactive: a user went idle (logged)
 * - POST /<method with dots as slashes>: the client's calls; here `echo` and
 *   `topic.join [topic]`, which subscribes the caller through the gateway's
 *   /v1 API (GATEWAY_API, default http://127.0.0.1:8081; BACKEND_API_TOKEN
 *   when the gateway has one).
 */
const http = require('node:http');

const PORT = Number(process.env.PORT ?? 9000);
const GATEWAY_API = process.env.GATEWAY_API ?? 'http://127.0.0.1:8081';
const TOKEN = process.env.BACKEND_API_TOKEN;
/** The user_id rule: 1 to 256 characters of A-Z a-z 0-9 : _ / - (anything else is refused by the gateway). */
const USER_ID = /^[A-Za-z0-9:_/-]{1,256}$/;

/** POST /gateway/authorize_connection: body [{connection_id}, [], {http_cookie, http_authorization, url_querystring}]. */
function authorize([meta, , { url_querystring }]) {
  const user = new URLSearchParams(url_querystring).get('user');
  if (user === null || !USER_ID.test(user)) return [401, { error: 'add ?user=<name> (letters, digits, : _ / -)' }];
  console.log(`authorized ${user}, connection_id ${meta.connection_id}`);
  return [200, { user_id: user }]; // the whole object reaches the client in its hello
}

/** A call: body [meta (request_id, connection_id, ...), args, kwargs]; the caller's identity is in the Authorization header. */
async function call(path, [meta, args, kwargs]) {
  if (path === '/echo') return [200, { args, kwargs }];
  if (path === '/topic/join' && typeof args[0] === 'string') {
    const topic = args[0].replace(/\./g, '/'); // topic a.b is /v1 path a/b
    const res = await fetch(`${GATEWAY_API}/v1/connection/${meta.connection_id}/subscriptions/${topic}`, {
      method: 'PUT',
      headers: TOKEN ? { Authorization: `Bearer ${TOKEN}` } : {},
    });
    return res.status === 204 ? [200, { joined: args[0] }] : [500, { error: `gateway answered ${res.status}` }];
  }
  return [404, { error: 'no such method' }];
}

/** `Authorization: Gateway+json <base64 of the authorization answer>` on every request after the authorization. */
function userOf(header) {
  if (!header?.startsWith('Gateway+json ')) return null;
  return JSON.parse(Buffer.from(header.slice('Gateway+json '.length), 'base64').toString('utf8')).user_id;
}

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', async () => {
    let status = 500;
    let body = { error: 'backend error' };
    try {
      const request = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      if (req.method !== 'POST') [status, body] = [405, { error: 'POST only' }];
      else if (req.url === '/gateway/authorize_connection') [status, body] = authorize(request);
      else if (req.url === '/gateway/session_inactive') {
        console.log(`${userOf(req.headers.authorization)} went inactive`);
        [status, body] = [200, {}];
      } else [status, body] = await call(req.url, request);
    } catch (err) {
      console.error(err);
    }
    const text = JSON.stringify(body);
    res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) }).end(text);
  });
});

server.listen(PORT, '127.0.0.1', () => console.log(`minimal backend on http://127.0.0.1:${server.address().port}`));
