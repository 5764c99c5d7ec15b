'use strict';
// The Socket.IO peer (issue 33): a Socket.IO 4.8 server doing the bench's jobs
// the way a Socket.IO app does them, selected with `--against socketio`.
//   transport   WebSocket only (no long-polling, no upgrade), no compression
//   connect     an auth middleware (`io.use`) POSTs the same body to the same
//               bench upstream as the gateway's authorization, keeps the answer,
//               and the connection handler joins the user's room `user.<user_id>`
//               (the room join on connect); the client's CONNECT answer carries
//               the socket id, as the gateway's hello carries the connection id
//   calls       `socket.emit('call', method, meta, args, kwargs, ack)`: checked
//               like a gateway call, POSTed with the `Authorization: Gateway+json`
//               identity header, the JSON answer parsed and acked as
//               ('result', meta, body), or ('error', meta, null)
//   /v1         PUT …/subscriptions/<topic> joins the socket to room <topic>;
//               POST /v1/publish/<topic> parses the body and broadcasts it to
//               the room (`io.to(topic).emit('message', topic, body)`: Socket.IO
//               encodes a broadcast once, WebSocket frame included)
// Socket.IO has no slow-consumer limit (a socket's buffer grows unbounded) and
// pings every client every 25 s (its default heartbeat); both are left as they are.
// Not implemented: lattices, resume (its connection state recovery is off by default).
//
// Env: UPSTREAM_URL, HOST (127.0.0.1), PORT (Socket.IO), BACKEND_API_PORT (/v1),
// UPSTREAM_MAX_SOCKETS (100), UPSTREAM_TIMEOUT_MS (30000).

const http = require('node:http');
const { upstreamPoster } = require('../lib/upstream-post');
const { SUBSCRIBE_RE, PUBLISH_RE, createApiServer } = require('../lib/baseline-api');
const { Server } = require('socket.io');

const METHOD_RE = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;
const HOST = process.env.HOST || '127.0.0.1';

// ---- upstream (as baseline/server.js) ---------------------------------------

const post = upstreamPoster('socketio-baseline/1');

const isJsonType = (ct) => typeof ct === 'string' && ct.startsWith('application/json');
const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

function parseOrUndefined(text) {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

// ---- Socket.IO ----------------------------------------------------------------

const publicServer = http.createServer((req, res) => res.writeHead(404, { 'Content-Length': '0' }).end());
const io = new Server(publicServer, {
  transports: ['websocket'],
  allowUpgrades: false,
  serveClient: false,
  perMessageDeflate: false,
  httpCompression: false,
  maxHttpBufferSize: 2 * 1024 * 1024,
});

/** The auth middleware: the gateway's authorization request, to the same upstream. */
io.use((socket, next) => {
  const req = socket.request;
  const at = req.url.indexOf('?');
  const kwargs = {
    http_cookie: req.headers.cookie ?? null,
    http_authorization: req.headers.authorization ?? null,
    url_querystring: at < 0 ? '' : req.url.slice(at + 1),
  };
  const body = JSON.stringify([{ connection_id: socket.id }, [], kwargs]);
  post('/gateway/authorize_connection', body, null, (status, ct, text) => {
    const answer = status === 200 && isJsonType(ct) ? parseOrUndefined(text) : undefined;
    if (!isObject(answer) || typeof answer.user_id !== 'string') return next(new Error('backend_error'));
    socket.data.user = answer.user_id;
    socket.data.identity = 'Gateway+json ' + Buffer.from(JSON.stringify(answer)).toString('base64');
    next();
  });
});

io.on('connection', (socket) => {
  socket.join('user.' + socket.data.user);
  socket.on('call', (method, meta, args, kwargs, ack) => onCall(socket, method, meta, args, kwargs, ack));
});

function onCall(socket, method, meta, args, kwargs, ack) {
  if (typeof ack !== 'function') return void socket.disconnect(true);
  if (
    typeof method !== 'string' ||
    !METHOD_RE.test(method) ||
    method.startsWith('gateway.') ||
    !isObject(meta) ||
    meta.request_id === undefined ||
    !Array.isArray(args) ||
    !isObject(kwargs)
  ) {
    return ack('error', { ...meta, error_kind: 'validation_error' }, 'invalid call');
  }
  const body = JSON.stringify([{ ...meta, connection_id: socket.id }, args, kwargs]);
  post('/' + method.replace(/\./g, '/'), body, socket.data.identity, (status, ct, text) => {
    const answer = status === 200 && isJsonType(ct) ? parseOrUndefined(text) : undefined;
    if (answer !== undefined) return ack('result', meta, answer);
    const httpError = status === 0 || status === 200 ? 500 : status;
    ack('error', { ...meta, error_kind: 'http_error', http_error: httpError }, null);
  });
}

// ---- backend API (/v1) ----------------------------------------------------------

const apiServer = createApiServer(api);

/** Route one /v1 request; returns the status. */
function api(req, body) {
  const url = req.url;
  let m;
  if (req.method === 'GET' && (url === '/health/ready' || url === '/health/live')) return 200;
  if (req.method === 'PUT' && (m = SUBSCRIBE_RE.exec(url)) !== null) {
    const socket = io.sockets.sockets.get(m[1]);
    if (socket !== undefined) socket.join(m[2].replace(/\//g, '.'));
    return 204;
  }
  if (req.method === 'POST' && (m = PUBLISH_RE.exec(url)) !== null) {
    if (!isJsonType(req.headers['content-type']) || body.length === 0) return 400;
    const value = parseOrUndefined(body.toString('utf8'));
    if (value === undefined) return 400;
    const topic = m[1].replace(/\//g, '.');
    io.to(topic).emit('message', topic, value);
    return 204;
  }
  return 404;
}

// ---- start ------------------------------------------------------------------

apiServer.listen(Number(process.env.BACKEND_API_PORT || 8081), '127.0.0.1', () => {
  publicServer.listen(Number(process.env.PORT || 8080), HOST);
});
process.on('SIGTERM', () => process.exit(0));
