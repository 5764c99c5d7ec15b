'use strict';
// The `api` scenario's references: the /v1 requests it sends, answered by a
// bare route doing only the unavoidable work, no validation beyond JSON.parse:
//   POST /v1/publish/*, POST /v1/lattice/*   read the body, JSON.parse, 204
//   PUT  /v1/connection/*                    read the (empty) body, 204
//   POST /v1/batch                           read, JSON.parse, 200 {"results": [{"status": 204}, …]}
//   GET  /health/ready                       200 (the driver waits for it)
// `node bench/baseline/api-bare.js express` serves them with Express 5 routes
// (express.Router, body parser off: the same read + JSON.parse by hand);
// `… node` with a plain node:http handler. Env: HOST, BACKEND_API_PORT.

const http = require('node:http');

const HOST = process.env.HOST || '127.0.0.1';
const PORT = Number(process.env.BACKEND_API_PORT || 8081);
const kind = process.argv[2] || process.env.API_BARE || 'node';

/** Read the whole body as a string. */
function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function batchAnswer(text) {
  const { commands } = JSON.parse(text);
  return JSON.stringify({ results: commands.map(() => ({ status: 204 })) });
}

async function nodeHandler(req, res) {
  const url = req.url;
  try {
    const text = await readBody(req);
    if (req.method === 'POST' && (url.startsWith('/v1/publish/') || url.startsWith('/v1/lattice/'))) {
      JSON.parse(text);
      res.writeHead(204).end();
    } else if (req.method === 'PUT' && url.startsWith('/v1/connection/')) {
      res.writeHead(204).end();
    } else if (req.method === 'POST' && url === '/v1/batch') {
      const answer = batchAnswer(text);
      res
        .writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(answer) })
        .end(answer);
    } else if (req.method === 'GET' && url === '/health/ready') {
      res.writeHead(200, { 'Content-Length': '2' }).end('ok');
    } else {
      res.writeHead(404, { 'Content-Length': '0' }).end();
    }
  } catch {
    res.writeHead(400, { 'Content-Length': '0' }).end();
  }
}

function expressApp() {
  const express = require('express');
  const app = express();
  app.disable('x-powered-by');
  const parsed = (fn) => async (req, res) => {
    try {
      fn(req, res, await readBody(req));
    } catch {
      res.status(400).end();
    }
  };
  app.post(
    '/v1/publish/*topic',
    parsed((req, res, text) => (JSON.parse(text), res.status(204).end())),
  );
  app.post(
    '/v1/lattice/*namespace',
    parsed((req, res, text) => (JSON.parse(text), res.status(204).end())),
  );
  app.put(
    '/v1/connection/:cid/subscriptions/*topic',
    parsed((req, res) => res.status(204).end()),
  );
  app.post(
    '/v1/batch',
    parsed((req, res, text) => res.type('application/json').send(batchAnswer(text))),
  );
  app.get('/health/ready', (req, res) => res.send('ok'));
  return app;
}

const server = http.createServer(kind === 'express' ? expressApp() : nodeHandler);
server.keepAliveTimeout = 60_000;
server.listen(PORT, HOST);
process.on('SIGTERM', () => process.exit(0));
