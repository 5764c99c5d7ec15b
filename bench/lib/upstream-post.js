'use strict';
// The baselines' upstream client (bench/baseline/server.js and socketio.js):
// POST to UPSTREAM_URL's path prefix on keep-alive sockets, as the gateway does.
// Environment: UPSTREAM_URL (required), UPSTREAM_MAX_SOCKETS (100), UPSTREAM_TIMEOUT_MS (30000).

const http = require('node:http');

/** `post(path, body, authorization, done(status, contentType, text))` for a baseline named `userAgent`. */
function upstreamPoster(userAgent) {
  const timeoutMs = Number(process.env.UPSTREAM_TIMEOUT_MS || 30000);
  const upstream = new URL(process.env.UPSTREAM_URL);
  const prefix = upstream.pathname.replace(/\/$/, '');
  const agent = new http.Agent({ keepAlive: true, maxSockets: Number(process.env.UPSTREAM_MAX_SOCKETS || 100) });
  return function post(path, body, authorization, done) {
    const headers = {
      'Content-Type': 'application/json',
      'Content-Length': Buffer.byteLength(body),
      'User-Agent': userAgent,
    };
    if (authorization !== null) headers.Authorization = authorization;
    const req = http.request(
      { host: upstream.hostname, port: upstream.port, path: prefix + path, method: 'POST', agent, headers },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => done(res.statusCode, res.headers['content-type'], Buffer.concat(chunks).toString('utf8')));
      },
    );
    req.setTimeout(timeoutMs, () => req.destroy(new Error('timeout')));
    req.on('error', () => done(0, undefined, ''));
    req.end(body);
  };
}

module.exports = { upstreamPoster };
