'use strict';
// One load-generator process, forked by bench/run.js (several of them share the
// sockets: one process cannot drive 10k). It holds `ws` client connections and
// answers the driver's commands over IPC: {id, cmd, ...} → {id, ...result}.
//
// Frames are counted, not parsed: only 1 in `sampleEvery` is parsed, to read
// the send timestamp `t` (epoch ms, performance.timeOrigin + performance.now(),
// comparable across processes on one machine) embedded by the sender.
//
// Commands:
//   open    {url, api, count, offset, concurrency, userPrefix, topic?, lattice?, ipBase, timeoutMs, resumable?, group?, dialect?}
//           open `count` connections (users <userPrefix><offset+i>), wait for hello (whose auth
//           object carries the cid), then PUT the topic subscription / lattice subscription.
//           dialect 'socketio': the server is bench/baseline/socketio.js, spoken to in Socket.IO's
//           own protocol (Engine.IO 4 over a bare WebSocket, see openSocketIo): its CONNECT answer
//           is the hello (the socket id is the cid), events are frames, acks are call replies.
//           resumable: also offer `gateway-resume` (SPEC §12.1) and keep the hello's resume token.
//           group: a name for these connections (default ""), for the commands below.
//   expect  {perConn, sampleEvery}      zero the counters; frames of group "" from now on are counted
//   wait    {timeoutMs}                 resolve when every connection got perConn frames (or timeout)
//   drop    {group}                     terminate the group's sockets without a close frame (a network
//                                       loss: their sessions detach) and keep them for `resume`
//   resume  {group, url, concurrency, ipBase, timeoutMs}  reconnect every dropped connection of the
//           group offering `gateway-resume.<token, positions>`; a hello that is not `resumed: true`
//           with the same cid counts as failed. Latency: socket open to the resumed hello.
//   goodbye {group, code}               close the group's sockets with a close frame (1000 ends a
//                                       resumable session at once) and wait for the server's answer
//   rpc     {inflight, durationMs, sampleEvery}  closed-loop echo calls on every connection
//   direct  {url, inflight, maxSockets, durationMs, authorization}  POST /echo straight to the upstream (the limit)
//   close   {}                          terminate every socket

const http = require('node:http');
const WebSocket = require('ws');
const { SUBPROTOCOL, RESUME_OPT_IN, WORKER, now, sleep, httpCaller, serve } = require('./lib/worker');

const PAD = 'x'.repeat(40);

/** Ready connections: {ws, cid, user, group, token, n, seq, out}. */
const conns = [];
/** Connections dropped by `drop`, by group, waiting for `resume`. */
const dropped = new Map();
let unexpectedCloses = 0;
let isClosing = false;

// Frame accounting (all modes).
let received = 0;
let expectedTotal = 0;
let perConnExpected = 0;
let sampleEvery = 0;
let countdown = 0;
let samples = [];
let lastAt = 0;
let waiter = null;

// rpc mode
let isRpc = false;
let rpcRunning = false;
let rpcOk = 0;
let rpcErrors = 0;

function onFrame(conn, data) {
  if (conn.group !== '') return; // only group "" is counted (expect/wait); others get no traffic
  received++;
  conn.n++;
  lastAt = now();
  if (isRpc) return onReply(conn, data);
  if (sampleEvery > 0 && --countdown <= 0) {
    countdown = sampleEvery;
    const t = JSON.parse(conn.isSocketIo ? socketIoArgs(data) : data)[2].t;
    if (typeof t === 'number') samples.push(lastAt - t);
  }
  if (received === expectedTotal && waiter !== null) waiter();
}

// ---- open -----------------------------------------------------------------

/** One /v1 request; its status, 0 on a connection error (retried once). */
const httpCall = httpCaller(8);

/**
 * One client socket (the bench's options; source addresses spread over 127/8 so tens of
 * thousands of sockets never run out of ports). `accept(data, ws)` is given each message
 * until the handshake is over: it returns undefined to wait for the next one, the
 * connection (or its promise) once the server let it in, or throws the reason to refuse
 * it. Resolves `{ok, why}` or `{ok, startedAt, helloAt, readyAt}` (helloAt: the last
 * handshake message).
 */
function dial(o, url, protocols, index, accept) {
  const localAddress = `127.${o.ipBase}.${WORKER + 1}.${(index % 200) + 1}`;
  const startedAt = now();
  return new Promise((resolve) => {
    const ws = new WebSocket(url, protocols, {
      perMessageDeflate: false,
      skipUTF8Validation: true,
      handshakeTimeout: o.timeoutMs,
      localAddress,
    });
    let conn = null;
    const fail = (why) => {
      if (conn === null) {
        conn = false;
        ws.terminate();
        resolve({ ok: false, why });
      }
    };
    ws.on('error', (err) => fail(err.code || err.message));
    ws.on('close', () => {
      if (conn) noteClose(conn);
      else fail('closed before hello');
    });
    const onHandshake = async (data) => {
      const helloAt = now();
      let c;
      try {
        c = accept(data, ws);
        if (c === undefined) return; // more handshake messages to come
        ws.off('message', onHandshake);
        c = await c;
      } catch (why) {
        return fail(String(why));
      }
      if (conn === false) return;
      conn = c;
      conns.push(c);
      resolve({ ok: true, startedAt, helloAt, readyAt: now() });
    };
    ws.on('message', onHandshake);
  });
}

/** The gateway's handshake: the first frame is hello (or the refusal). */
const firstFrame = (accept) => (data, ws) => accept(JSON.parse(data), ws);

/** The /v1 subscriptions a new connection asks for (`o.topic`, `o.lattice`), through the server's API. */
async function subscribe(o, c) {
  if (o.topic) {
    const status = await httpCall(
      'PUT',
      `${o.api}/v1/connection/${c.cid}/subscriptions/${o.topic.replace('{user}', c.user)}`,
    );
    if (status !== 204) throw 'subscribe status ' + status;
  }
  if (o.lattice) {
    const body = JSON.stringify({ shared: o.lattice.shared, private: { [c.user]: o.lattice.private } });
    const status = await httpCall('PUT', `${o.api}/v1/connection/${c.cid}/lattices/${o.lattice.namespace}`, body);
    if (status !== 204) throw 'lattice status ' + status;
  }
  return c;
}

function openOne(o, index) {
  if (o.dialect === 'socketio') return openSocketIo(o, index);
  const user = o.userPrefix + index;
  const protocols = o.resumable ? [SUBPROTOCOL, RESUME_OPT_IN] : SUBPROTOCOL;
  // `o.subscribeInAuth`: the bench upstream answers the authorization with `Gateway-Subscribe: <that topic>`.
  const query = o.subscribeInAuth
    ? `user=${user}&subscribe=${encodeURIComponent(o.subscribeInAuth.replace('{user}', user))}`
    : `user=${user}`;
  return dial(
    o,
    `${o.url}?${query}`,
    protocols,
    index,
    firstFrame((frame, ws) => {
      if (frame[0] !== 'hello' || typeof frame[2].cid !== 'string')
        throw 'not hello: ' + JSON.stringify(frame).slice(0, 80);
      const token = frame[1].resume ? frame[1].resume.token : null;
      if (o.resumable && typeof token !== 'string') throw 'hello without a resume token';
      const c = { ws, cid: frame[2].cid, user, group: o.group || '', token, n: 0, seq: 0, out: 0, isLeaving: false };
      ws.on('message', (d) => onFrame(c, d));
      return subscribe(o, c);
    }),
  );
}

// ---- Socket.IO (bench/baseline/socketio.js) ---------------------------------
//
// Its wire protocol, spoken over the same `ws` client as the gateway's so the
// load side costs the same on both (frames counted, 1 in K parsed): the
// server opens with an Engine.IO OPEN packet `0{...}`; the client asks for the
// main namespace with `40`; the server answers `40{"sid": <socket id>}` once
// the auth middleware let it in, or `44{"message": ...}`. Events come as
// `42[name, ...args]`, a call goes out as `42<id>["call", method, meta, args,
// kwargs]` and its ack comes back as `43<id>[...args]`; a ping `2` is answered
// `3`. bench/lib/socketio-check.js checks the server with socket.io-client itself.

const SIO_PING = 0x32;

/** The JSON array of a Socket.IO event or ack packet (`42[...]`, `43<id>[...]`). */
function socketIoArgs(data) {
  return data.subarray(data.indexOf(0x5b));
}

function openSocketIo(o, index) {
  const user = o.userPrefix + index;
  let isOpen = false;
  return dial(o, `${o.url}socket.io/?EIO=4&transport=websocket&user=${user}`, [], index, (data, ws) => {
    const text = data.toString();
    if (!isOpen) {
      if (text[0] !== '0') throw 'not an Engine.IO open packet: ' + text.slice(0, 80);
      isOpen = true;
      ws.send('40');
      return undefined;
    }
    if (text.startsWith('44')) throw 'connect_error ' + text.slice(2, 80);
    if (!text.startsWith('40{')) throw 'not a CONNECT answer: ' + text.slice(0, 80);
    const cid = JSON.parse(text.slice(2)).sid;
    const c = { ws, cid, user, group: o.group || '', token: null, n: 0, seq: 0, out: 0, isLeaving: false };
    c.isSocketIo = true;
    ws.on('message', (d) => (d.length === 1 && d[0] === SIO_PING ? ws.send('3') : onFrame(c, d)));
    return subscribe(o, c);
  });
}

/** A close the bench did not ask for (drop, goodbye and close ask) is a loss. */
function noteClose(conn) {
  if (!isClosing && !conn.isLeaving) unexpectedCloses++;
}

async function open(o) {
  let next = 0;
  let failed = 0;
  const whys = {};
  const helloMs = [];
  let firstAt = Infinity;
  let lastReadyAt = 0;
  let lastHelloAt = 0;
  const lane = async () => {
    while (next < o.count) {
      const r = await (o.one ? o.one(next++) : openOne(o, o.offset + next++));
      if (!r.ok) {
        failed++;
        whys[r.why] = (whys[r.why] || 0) + 1;
        continue;
      }
      firstAt = Math.min(firstAt, r.startedAt);
      lastHelloAt = Math.max(lastHelloAt, r.helloAt);
      lastReadyAt = Math.max(lastReadyAt, r.readyAt);
      helloMs.push(r.helloAt - r.startedAt);
    }
  };
  await Promise.all(Array.from({ length: Math.min(o.concurrency, o.count) }, lane));
  return { opened: o.count - failed, failed, whys, firstAt, lastHelloAt, lastReadyAt, helloMs };
}

// ---- resume (SPEC §12) ----------------------------------------------------

const inGroup = (group) => conns.filter((c) => c.group === group);

function removeGroup(group) {
  const kept = conns.filter((c) => c.group !== group);
  conns.length = 0;
  conns.push(...kept);
}

/** Drop the group's sockets as a network loss does: no close frame, so their sessions detach. */
function drop(o) {
  const group = inGroup(o.group);
  for (const c of group) {
    c.isLeaving = true;
    c.ws.terminate();
  }
  removeGroup(o.group);
  dropped.set(o.group, [...(dropped.get(o.group) || []), ...group]);
  return { dropped: group.length };
}

/** Reconnect dropped connection `old` with its token; ok only for a resumed hello of the same connection id. */
function resumeOne(o, old, index) {
  const offer = Buffer.from(JSON.stringify({ token: old.token, positions: {} })).toString('base64url');
  const protocols = [SUBPROTOCOL, `${RESUME_OPT_IN}.${offer}`];
  return dial(
    o,
    `${o.url}?user=${old.user}`,
    protocols,
    index,
    firstFrame((frame, ws) => {
      if (frame[0] !== 'hello') throw 'not hello: ' + JSON.stringify(frame).slice(0, 80);
      const meta = frame[1];
      if (meta.resumed !== true) throw 'not resumed';
      if (frame[2].cid !== old.cid) throw 'resumed with another connection id';
      if (!meta.resume || typeof meta.resume.token !== 'string') throw 'resumed hello without a new token';
      const c = { ...old, ws, token: meta.resume.token, n: 0, seq: 0, out: 0, isLeaving: false };
      ws.on('message', (d) => onFrame(c, d));
      return c;
    }),
  );
}

/** Resume every dropped connection of the group (those that fail stay dropped no more: they are counted). */
function resume(o) {
  const todo = dropped.get(o.group) || [];
  dropped.delete(o.group);
  return open({ ...o, count: todo.length, one: (i) => resumeOne(o, todo[i], i) });
}

/** Close the group's sockets with `code` and wait (bounded) until each got the server's close frame. */
async function goodbye(o) {
  const group = inGroup(o.group);
  removeGroup(o.group);
  const deadline = sleep(o.timeoutMs || 10_000).then(() => 'timeout');
  const closes = group.map((c) => {
    c.isLeaving = true;
    const closed = new Promise((resolve) =>
      c.ws.readyState === WebSocket.CLOSED ? resolve('closed') : c.ws.once('close', () => resolve('closed')),
    );
    c.ws.close(o.code || 1000);
    return Promise.race([closed, deadline]);
  });
  const outcomes = await Promise.all(closes);
  return {
    closed: outcomes.filter((x) => x === 'closed').length,
    timedOut: outcomes.filter((x) => x === 'timeout').length,
  };
}

// ---- counting -------------------------------------------------------------

function expect(o) {
  received = 0;
  for (const c of conns) c.n = 0;
  perConnExpected = o.perConn;
  expectedTotal = o.perConn * inGroup('').length;
  sampleEvery = o.sampleEvery || 0;
  countdown = sampleEvery;
  samples = [];
  lastAt = 0;
  return { connections: inGroup('').length, expectedTotal };
}

async function wait(o) {
  if (received < expectedTotal) {
    await new Promise((resolve) => {
      const timer = setTimeout(resolve, o.timeoutMs);
      waiter = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    waiter = null;
  }
  // A short grace to notice duplicates/extra frames after the expected count.
  await sleep(50);
  let short = 0;
  let extra = 0;
  for (const c of inGroup('')) {
    if (c.n < perConnExpected) short += perConnExpected - c.n;
    else if (c.n > perConnExpected) extra += c.n - perConnExpected;
  }
  return { received, expectedTotal, short, extra, lastAt, samples, unexpectedCloses };
}

// ---- rpc ------------------------------------------------------------------

function rpcSend(c) {
  c.out++;
  const seq = ++c.seq;
  const call = '{"request_id":' + seq + '},[{"t":' + now() + ',"pad":"' + PAD + '"}],{}]';
  c.ws.send(c.isSocketIo ? '42' + seq + '["call","echo",' + call : '["echo",' + call);
}

function onReply(c, data) {
  c.out--;
  const reply = c.isSocketIo ? socketIoArgs(data) : data;
  // `["result",` vs `["error",`: the third byte tells them apart without parsing.
  if (reply[2] === 0x72) rpcOk++;
  else rpcErrors++;
  if (sampleEvery > 0 && --countdown <= 0) {
    countdown = sampleEvery;
    const frame = JSON.parse(reply);
    if (frame[0] === 'result') samples.push(lastAt - frame[2][0].t);
  }
  if (rpcRunning) rpcSend(c);
}

async function rpc(o) {
  isRpc = true;
  rpcOk = rpcErrors = 0;
  samples = [];
  sampleEvery = o.sampleEvery;
  countdown = sampleEvery;
  rpcRunning = true;
  const startedAt = now();
  for (const c of conns) for (let i = 0; i < o.inflight; i++) rpcSend(c);
  await sleep(o.durationMs);
  rpcRunning = false;
  const elapsedMs = now() - startedAt;
  const calls = rpcOk + rpcErrors;
  const ok = rpcOk;
  const errors = rpcErrors;
  const drainUntil = Date.now() + 10_000;
  while (conns.some((c) => c.out > 0) && Date.now() < drainUntil) await sleep(10);
  const lost = conns.reduce((sum, c) => sum + c.out, 0);
  for (const c of conns) c.out = 0;
  isRpc = false;
  return { calls, ok, errors, lost, elapsedMs, samples };
}

/** The limit: the same echo straight to the upstream over HTTP keep-alive, closed loop. */
async function direct(o) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: o.maxSockets || o.inflight });
  const url = new URL(o.url);
  let calls = 0;
  let errors = 0;
  let running = true;
  const lat = [];
  let k = 0;
  const one = () =>
    new Promise((resolve) => {
      const t = now();
      const body =
        '[{"request_id":' + k++ + ',"connection_id":"bench0000000000000000"},[{"t":' + t + ',"pad":"' + PAD + '"}],{}]';
      const headers = {
        'Content-Type': 'application/json',
        'Content-Length': Buffer.byteLength(body),
        Authorization: o.authorization,
      };
      const req = http.request(
        { host: url.hostname, port: url.port, path: '/echo', method: 'POST', agent, headers },
        (res) => {
          const chunks = [];
          res.on('data', (c) => chunks.push(c));
          res.on('end', () => {
            JSON.parse(Buffer.concat(chunks).toString());
            if (res.statusCode === 200) calls++;
            else errors++;
            if (calls % o.sampleEvery === 0) lat.push(now() - t);
            resolve();
          });
        },
      );
      req.on('error', () => {
        errors++;
        resolve();
      });
      req.end(body);
    });
  const lane = async () => {
    while (running) await one();
  };
  const startedAt = now();
  const lanes = Array.from({ length: o.inflight }, lane);
  await sleep(o.durationMs);
  running = false;
  const elapsedMs = now() - startedAt;
  const done = calls;
  await Promise.all(lanes);
  agent.destroy();
  return { calls: done, errors, lost: 0, elapsedMs, samples: lat };
}

// ---- IPC ------------------------------------------------------------------

const commands = {
  open,
  expect,
  wait,
  rpc,
  direct,
  drop,
  resume,
  goodbye,
  close() {
    isClosing = true;
    for (const c of conns) c.ws.terminate();
    conns.length = 0;
    return {};
  },
};

serve(commands);
