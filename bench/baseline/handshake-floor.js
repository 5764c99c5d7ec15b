'use strict';
// The handshake floor: a raw `ws` server that accepts the WebSocket handshake
// and answers it with one fixed `hello` frame, and does nothing else (no
// authorization, no state, no timers). A resume (SPEC §12.3) pays at least
// this much, as every connection does: TCP accept, the HTTP upgrade, the
// Sec-WebSocket-Accept digest, one frame out. So connects-with-auth per
// second of the gateway against this server's connects per second is the
// most a resume could gain over a connect on the same machine and load; the
// resume scenario measures it beside its resume-vs-connect ratio.
//
// Env: HOST (127.0.0.1), PORT (ws), BACKEND_API_PORT (GET /health/ready → 200).

const http = require('node:http');
const { WebSocketServer } = require('ws');

const HOST = process.env.HOST || '127.0.0.1';
const SUBPROTOCOL = 'v1.gateway-lattice+json';
let connections = 0;

const wss = new WebSocketServer({
  host: HOST,
  port: Number(process.env.PORT),
  perMessageDeflate: false,
  handleProtocols: (protocols) => (protocols.has(SUBPROTOCOL) ? SUBPROTOCOL : false),
});
wss.on('connection', (ws) => {
  // The load worker reads the connection id from the auth response (hello's third element).
  ws.send(`["hello",{},{"user_id":"floor","cid":"f${connections++}"}]`);
  ws.on('error', () => ws.terminate());
});

http
  .createServer((req, res) => {
    res.writeHead(req.url === '/health/ready' ? 200 : 404, { 'Content-Type': 'application/json' });
    res.end('{}');
  })
  .listen(Number(process.env.BACKEND_API_PORT), HOST);
