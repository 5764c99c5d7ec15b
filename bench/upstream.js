'use strict';
// The fast local upstream the benchmarks point both servers at: a raw
// node:http keep-alive server. It answers
//   POST /gateway/authorize_connection  → {"user_id": <?user= or "u<n>">, "cid": <connection_id>},
//                                         with `Gateway-Subscribe: <?subscribe=>` when the query names one
//   POST /gateway/session_inactive      → {}
//   POST /gateway/refresh_connection    → the identity it was sent (SPEC §14: the same object, a refresh `ok`)
//   POST /echo                          → the call's args (body[1])
// and 404 otherwise. `cid` in the answer reaches the client inside `hello`, so
// the load generator knows which connection id to subscribe through /v1.
//
// Run as a child of bench/run.js: `node bench/upstream.js` with PORT (0 = any);
// the bound port is sent over IPC ({ready, port}) or printed when standalone.
// Over IPC, {id, cmd: 'counts'} is answered {id, authorizations}: the
// authorization requests received so far (the deploy scenario counts them),
// and refreshes, the refresh requests (bench/refresh-cpu.js counts them).

const http = require('node:http');

let anonymous = 0;
let authorizations = 0;
let refreshes = 0;
const IDENTITY_SCHEME_LENGTH = 'Gateway+json '.length;
const JSON_HEADERS = { 'Content-Type': 'application/json', 'Content-Length': '0' };

function reply(res, status, text) {
  JSON_HEADERS['Content-Length'] = String(Buffer.byteLength(text));
  res.writeHead(status, JSON_HEADERS);
  res.end(text);
}

function paramFromQuery(query, name) {
  if (typeof query !== 'string' || query.length === 0) return null;
  for (const part of query.split('&')) {
    if (part.startsWith(name + '=')) return decodeURIComponent(part.slice(name.length + 1));
  }
  return null;
}

function handle(req, body, res) {
  if (req.method !== 'POST') return reply(res, 404, 'null');
  let parsed;
  try {
    parsed = JSON.parse(body);
  } catch {
    return reply(res, 400, '"bad json"');
  }
  switch (req.url) {
    case '/gateway/authorize_connection': {
      authorizations++;
      const meta = parsed[0];
      const kwargs = parsed[2];
      const query = kwargs && kwargs.url_querystring;
      const user = paramFromQuery(query, 'user') || 'u' + anonymous++;
      const topic = paramFromQuery(query, 'subscribe');
      if (topic !== null) res.setHeader('Gateway-Subscribe', topic);
      return reply(res, 200, JSON.stringify({ user_id: user, cid: meta.connection_id }));
    }
    case '/gateway/session_inactive':
      return reply(res, 200, '{}');
    case '/gateway/refresh_connection':
      refreshes++;
      return reply(
        res,
        200,
        Buffer.from(String(req.headers.authorization).slice(IDENTITY_SCHEME_LENGTH), 'base64').toString('utf8'),
      );
    case '/echo':
      return reply(res, 200, JSON.stringify(parsed[1]));
    default:
      return reply(res, 404, 'null');
  }
}

function createUpstream() {
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () =>
      handle(req, chunks.length === 1 ? chunks[0].toString() : Buffer.concat(chunks).toString(), res),
    );
  });
  server.keepAliveTimeout = 120_000;
  server.headersTimeout = 130_000;
  server.requestTimeout = 0;
  server.maxRequestsPerSocket = 0;
  return server;
}

if (require.main === module) {
  const server = createUpstream();
  server.listen(Number(process.env.PORT || 0), '127.0.0.1', () => {
    const port = server.address().port;
    if (process.send) {
      process.send({ ready: true, port });
      process.on('message', (msg) => {
        if (msg && msg.cmd === 'counts') process.send({ id: msg.id, authorizations, refreshes });
      });
      process.channel.unref();
    } else {
      process.stdout.write(`upstream listening on 127.0.0.1:${port}\n`);
    }
  });
  process.on('SIGTERM', () => process.exit(0));
  process.on('disconnect', () => process.exit(0)); // the driver went away
}

module.exports = { createUpstream };
