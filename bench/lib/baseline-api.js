'use strict';
// What the baselines' /v1 listeners share (bench/baseline/server.js and socketio.js):
// the subscribe and publish paths, and a keep-alive server that answers each request
// with the status its route returns (no body).

const http = require('node:http');

const SUBSCRIBE_RE = /^\/v1\/connection\/([A-Za-z0-9_-]{1,64})\/subscriptions\/([A-Za-z0-9_/-]+)$/;
const PUBLISH_RE = /^\/v1\/publish\/([A-Za-z0-9_/-]+)$/;

/** An HTTP server answering `route(req, body)`'s status once the body is read. */
function createApiServer(route) {
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => res.writeHead(route(req, Buffer.concat(chunks)), { 'Content-Length': '0' }).end());
  });
  server.keepAliveTimeout = 120_000;
  return server;
}

module.exports = { SUBSCRIBE_RE, PUBLISH_RE, createApiServer };
