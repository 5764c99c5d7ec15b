'use strict';
// Before the Socket.IO peer is measured, one real socket.io-client checks that
// it is the Socket.IO app the bench means: the connect passes the auth
// middleware (the bench upstream's answer) and joins the user's room, a call
// is acked with the upstream's answer, and a /v1 publish to a room reaches
// it. The load workers speak the same protocol over bare `ws` sockets
// (load-worker.js, openSocketIo), so what they count is what this client sees.

const { io } = require('socket.io-client');
const { httpStatus } = require('./worker');
const http = require('node:http');

const WAIT_MS = 5000;

function within(promise, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`socketio check: no ${what} within ${WAIT_MS} ms`)), WAIT_MS);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Throws, saying what failed, unless `server` (a started bench/baseline/socketio.js) works with socket.io-client. */
async function checkSocketIo(server) {
  const socket = io(server.url, { transports: ['websocket'], query: { user: 'check1' }, reconnection: false });
  const agent = new http.Agent({ keepAlive: false });
  try {
    await within(
      new Promise((resolve, reject) => {
        socket.once('connect', resolve);
        socket.once('connect_error', (err) => reject(new Error(`socketio check: connect_error ${err.message}`)));
      }),
      'connect',
    );
    const reply = await within(
      new Promise((resolve) => socket.emit('call', 'echo', { request_id: 1 }, [{ a: 1 }], {}, (...a) => resolve(a))),
      'ack of a call',
    );
    if (JSON.stringify(reply) !== '["result",{"request_id":1},[{"a":1}]]')
      throw new Error(`socketio check: call acked with ${JSON.stringify(reply)}`);
    const published = within(
      new Promise((resolve) => socket.on('message', (topic, body) => resolve([topic, body]))),
      'message to the user room',
    );
    // The room joined on connect.
    const status = await httpStatus(agent, 'POST', `${server.api}/v1/publish/user/check1`, '{"n":1}');
    if (status !== 204) throw new Error(`socketio check: publish answered ${status}`);
    const message = await published;
    if (JSON.stringify(message) !== '["user.check1",{"n":1}]')
      throw new Error(`socketio check: got ${JSON.stringify(message)}`);
  } finally {
    socket.disconnect();
    agent.destroy();
  }
}

module.exports = { checkSocketIo };
