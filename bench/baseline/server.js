'use strict';
// The Node floor: a minimal raw `ws` server that does the jobs the benchmark
// scenarios exercise, with no framework, speaking the gateway wire protocol
// as far as the scenarios need. Every ratio in bench/ is gateway ÷ this,
// measured in the same run. It is deliberately plain and honest: it does the
// work the gateway must also do (auth round trip, identity header, JSON
// validation of calls, upstream replies and /v1 bodies, slow-consumer check,
// encode-once fan-out) and no trick the gateway could not also use.
//
// Not implemented (not exercised by the scenarios): early-frame buffering,
// sessions and inactivity notices, heartbeats, presence, metrics, lattice
// types other than counters, limits other than the slow-consumer check.
//
// Env: UPSTREAM_URL, HOST (127.0.0.1), PORT (ws), BACKEND_API_PORT (/v1),
// UPSTREAM_MAX_SOCKETS (100), UPSTREAM_TIMEOUT_MS (30000).

const http = require('node:http');
const { upstreamPoster } = require('../lib/upstream-post');
const { SUBSCRIBE_RE, PUBLISH_RE, createApiServer } = require('../lib/baseline-api');
const crypto = require('node:crypto');
const { WebSocketServer } = require('ws');

const SUBPROTOCOL = 'v1.gateway-lattice+json';
const MAX_QUEUE_BYTES = 4 * 1024 * 1024;
const METHOD_RE = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;
const HOST = process.env.HOST || '127.0.0.1';

/** cid → Conn */
const connections = new Map();
/** topic (wire form) → Set<Conn> */
const topics = new Map();
/** namespace → { shared: Map<key, object>, private: Map<user, object>, subscribers: Set<Conn> } */
const lattices = new Map();

class Conn {
  constructor(ws, cid) {
    this.ws = ws;
    this.cid = cid;
    this.ready = false;
    this.user = null;
    this.identity = null;
    this.topics = null;
    this.namespaces = null;
  }

  send(frame) {
    if (!this.ready) return;
    if (this.ws.bufferedAmount > MAX_QUEUE_BYTES) return void this.ws.close(1008, 'slow_consumer');
    this.ws.send(frame, { binary: false });
  }
}

// ---- upstream ------------------------------------------------------------

const post = upstreamPoster('baseline/1');

const isJsonType = (ct) => typeof ct === 'string' && ct.startsWith('application/json');

function parseOrNull(text) {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

// ---- WebSocket side -------------------------------------------------------

const wss = new WebSocketServer({
  noServer: true,
  clientTracking: false,
  perMessageDeflate: false,
  maxPayload: 2 * 1024 * 1024,
  handleProtocols: () => SUBPROTOCOL, // checked in 'upgrade' below
});
const publicServer = http.createServer((req, res) => res.writeHead(404, { 'Content-Length': '0' }).end());
// A shared function: a closure in the 'upgrade' handler would share its context
// and keep `req` alive as long as the socket (the gateway avoids it too).
function destroySocket() {
  this.destroy();
}
publicServer.on('upgrade', (req, socket, head) => {
  socket.on('error', destroySocket);
  const offered = (req.headers['sec-websocket-protocol'] || '').split(',').map((p) => p.trim());
  if (!offered.includes(SUBPROTOCOL)) {
    return void socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
  }
  wss.handleUpgrade(req, socket, head, (ws) => onConnection(ws, req));
});

function onConnection(ws, req) {
  const conn = new Conn(ws, crypto.randomBytes(12).toString('base64url'));
  connections.set(conn.cid, conn);
  ws.on('message', (data, isBinary) => onFrame(conn, data, isBinary));
  ws.on('error', () => ws.terminate());
  ws.once('close', () => forget(conn));
  const at = req.url.indexOf('?');
  const kwargs = {
    http_cookie: req.headers.cookie ?? null,
    http_authorization: req.headers.authorization ?? null,
    url_querystring: at < 0 ? '' : req.url.slice(at + 1),
  };
  post(
    '/gateway/authorize_connection',
    JSON.stringify([{ connection_id: conn.cid }, [], kwargs]),
    null,
    (status, ct, text) => {
      if (!connections.has(conn.cid)) return;
      const answer = status === 200 && isJsonType(ct) ? parseOrNull(text) : undefined;
      if (answer === null || typeof answer !== 'object' || typeof answer.user_id !== 'string') {
        const s = status === 0 || status === 200 ? 500 : status;
        ws.send(`["fatal_error",{"error_kind":"http_error","http_error":${s}},null]`);
        return void ws.close(4000 + s, 'backend_error');
      }
      const json = JSON.stringify(answer);
      conn.user = answer.user_id;
      conn.identity = 'Gateway+json ' + Buffer.from(json).toString('base64');
      conn.ready = true;
      conn.send('["hello",{},' + json + ']');
      const ns = conn.namespaces;
      if (ns !== null) for (const name of ns) sendSnapshot(conn, name);
    },
  );
}

function onFrame(conn, data, isBinary) {
  if (!conn.ready) return;
  const call = isBinary ? undefined : parseOrNull(data.toString('utf8'));
  if (
    !Array.isArray(call) ||
    call.length !== 4 ||
    typeof call[0] !== 'string' ||
    !isObject(call[1]) ||
    !Array.isArray(call[2]) ||
    !isObject(call[3])
  ) {
    conn.ws.send('["fatal_error",{"error_kind":"validation_error"},"bad frame"]');
    return void conn.ws.close(1007, 'validation_error');
  }
  const [method, meta, args, kwargs] = call;
  if (!METHOD_RE.test(method) || method.startsWith('gateway.') || meta.request_id === undefined) {
    return conn.send('["error",' + JSON.stringify({ ...meta, error_kind: 'validation_error' }) + ',"invalid call"]');
  }
  const body = JSON.stringify([{ ...meta, connection_id: conn.cid }, args, kwargs]);
  post('/' + method.replace(/\./g, '/'), body, conn.identity, (status, ct, text) => {
    if (status === 200 && isJsonType(ct) && parseOrNull(text) !== undefined) {
      return conn.send('["result",' + JSON.stringify(meta) + ',' + text + ']');
    }
    conn.send(
      '["error",' +
        JSON.stringify({
          ...meta,
          error_kind: 'http_error',
          http_error: status === 0 || status === 200 ? 500 : status,
        }) +
        ',null]',
    );
  });
}

function forget(conn) {
  connections.delete(conn.cid);
  conn.ready = false;
  if (conn.topics !== null) {
    for (const topic of conn.topics) {
      const set = topics.get(topic);
      set.delete(conn);
      if (set.size === 0) topics.delete(topic);
    }
  }
  if (conn.namespaces !== null) {
    for (const name of conn.namespaces) {
      const lattice = lattices.get(name);
      lattice.subscribers.delete(conn);
      if (lattice.subscribers.size === 0) lattices.delete(name);
    }
  }
}

const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

// ---- backend API (/v1) ----------------------------------------------------

const LATTICE_SUB_RE = /^\/v1\/connection\/([A-Za-z0-9_-]{1,64})\/lattices\/([A-Za-z0-9_/-]+)$/;
const LATTICE_UPD_RE = /^\/v1\/lattice\/([A-Za-z0-9_/-]+)$/;

const apiServer = createApiServer(api);

/** Route one /v1 request; returns the status. */
function api(req, body) {
  const url = req.url;
  let m;
  if (req.method === 'GET' && (url === '/health/ready' || url === '/health/live')) return 200;
  if (req.method === 'PUT' && (m = SUBSCRIBE_RE.exec(url)) !== null) return subscribe(m[1], m[2].replace(/\//g, '.'));
  if (req.method === 'POST' && (m = PUBLISH_RE.exec(url)) !== null) return publish(m[1].replace(/\//g, '.'), req, body);
  if (req.method === 'PUT' && (m = LATTICE_SUB_RE.exec(url)) !== null)
    return latticeSubscribe(m[1], m[2].replace(/\//g, '.'), req, body);
  if (req.method === 'POST' && (m = LATTICE_UPD_RE.exec(url)) !== null)
    return latticeUpdate(m[1].replace(/\//g, '.'), req, body);
  return 404;
}

function jsonBody(req, body) {
  if (!isJsonType(req.headers['content-type']) || body.length === 0) return undefined;
  return parseOrNull(body.toString('utf8'));
}

function subscribe(cid, topic) {
  const conn = connections.get(cid);
  if (conn === undefined) return 204;
  let set = topics.get(topic);
  if (set === undefined) topics.set(topic, (set = new Set()));
  set.add(conn);
  (conn.topics ??= new Set()).add(topic);
  return 204;
}

function publish(topic, req, body) {
  if (jsonBody(req, body) === undefined) return 400;
  const set = topics.get(topic);
  if (set === undefined) return 204;
  // Serialize once: one Buffer for every subscriber.
  const frame = Buffer.concat([
    Buffer.from('["message",{"topic":' + JSON.stringify(topic) + '},'),
    body,
    Buffer.from(']'),
  ]);
  for (const conn of set) conn.send(frame);
  return 204;
}

// Lattices, counters only: shared key → {var: n}; private user → key → {var: n}.
// A user sees a shared key only when it has a private entry for it (SPEC §6.1).

function latticeSubscribe(cid, namespace, req, body) {
  const value = jsonBody(req, body);
  if (!isObject(value)) return 400;
  let lattice = lattices.get(namespace);
  if (lattice === undefined)
    lattices.set(namespace, (lattice = { shared: new Map(), private: new Map(), subscribers: new Set() }));
  const changed = mergeShared(lattice, value.shared);
  if (isObject(value.private)) {
    for (const [user, keys] of Object.entries(value.private))
      lattice.private.set(user, { ...lattice.private.get(user), ...keys });
  }
  if (changed !== null) deliver(lattice, namespace, changed);
  const conn = connections.get(cid);
  if (conn === undefined) return 204;
  lattice.subscribers.add(conn);
  (conn.namespaces ??= new Set()).add(namespace);
  if (conn.ready) sendSnapshot(conn, namespace);
  return 204;
}

function latticeUpdate(namespace, req, body) {
  const value = jsonBody(req, body);
  if (!isObject(value)) return 400;
  const lattice = lattices.get(namespace);
  if (lattice === undefined) return 204;
  const changed = mergeShared(lattice, value.shared);
  if (changed !== null) deliver(lattice, namespace, changed);
  return 204;
}

/** Max-merge shared counters; returns {key: {var: new}} of what grew, or null. */
function mergeShared(lattice, shared) {
  if (!isObject(shared)) return null;
  let changed = null;
  for (const [key, vars] of Object.entries(shared)) {
    let current = lattice.shared.get(key);
    if (current === undefined) lattice.shared.set(key, (current = {}));
    for (const [name, n] of Object.entries(vars)) {
      if (typeof n !== 'number') continue;
      if (current[name] === undefined || n > current[name]) {
        current[name] = n;
        ((changed ??= {})[key] ??= {})[name] = n;
      }
    }
  }
  return changed;
}

/** One frame per connection: the changed shared variables of the keys its user may see. */
function deliver(lattice, namespace, changed) {
  const head = '["lattice",{"namespace":' + JSON.stringify(namespace) + '},';
  for (const conn of lattice.subscribers) {
    if (!conn.ready) continue;
    const mine = lattice.private.get(conn.user);
    if (mine === undefined) continue;
    let visible = null;
    for (const key in changed) if (mine[key] !== undefined) (visible ??= {})[key] = changed[key];
    if (visible !== null) conn.send(head + JSON.stringify(visible) + ']');
  }
}

function sendSnapshot(conn, namespace) {
  const lattice = lattices.get(namespace);
  const mine = lattice.private.get(conn.user) || {};
  const snapshot = {};
  for (const key of Object.keys(mine)) snapshot[key] = { ...lattice.shared.get(key), ...mine[key] };
  conn.send('["lattice",{"namespace":' + JSON.stringify(namespace) + '},' + JSON.stringify(snapshot) + ']');
}

// ---- start ----------------------------------------------------------------

apiServer.listen(Number(process.env.BACKEND_API_PORT || 8081), '127.0.0.1', () => {
  publicServer.listen(Number(process.env.PORT || 8080), HOST);
});
process.on('SIGTERM', () => process.exit(0));
