'use strict';
// Clients of the deploy scenario (bench/deploy-scenario.js, SPEC §12 across a
// rolling restart), forked by the driver; it answers {id, cmd, ...} over IPC.
// Unlike load-worker.js, every message is parsed: each client checks the
// sequence numbers its topic's publisher puts in the payload (losses,
// duplicates) and keeps its topic position for the resume offer.
//
// A client behaves as the SDK (client/) does on a closed socket: it reconnects
// to another node (one of the others at random, as a load balancer would send
// it to a live one), after a jitter of 0-1 s (SPEC §12.5 on 1012; on
// another close code the SDK's first backoff is also at most 1 s), offering
// `gateway-resume.<{token, positions}>` when it holds a token, else the bare
// opt-in. A resumed hello (`resumed: true`, same connection id) keeps its
// subscription; any other hello is a new session, which subscribes again
// through /v1 as the app's backend would. A refused dial tries another node
// after 50-250 ms.
//
// Commands:
//   start  {nodes: [{url, api}], count, offset, topics, concurrency, ipBase}  open clients
//          offset..offset+count-1: user d<i>, topic deploy/t<i % topics>, first node i % nodes
//   watch  {node, users, timeoutMs}  one more client, user "watcher", subscribed to the
//          gateway.user lattice of `users` (PUT /v1/connection/<cid>/users); resolves with
//          the first snapshot. Every `offline` status it is sent afterwards is a flap.
//   status {}                        how many clients (watcher included) are connected and subscribed
//   report {lastSeq: [n per topic], unpublished: {topicIndex: [seq]}, topics, timeoutMs}  wait
//          (bounded) until every client saw 1..n of its topic (but the unpublished), then the counts
//   close  {}                        terminate every socket, reconnect no more

const WebSocket = require('ws');
const { SUBPROTOCOL, RESUME_OPT_IN, WORKER, now, sleep, httpCaller, serve } = require('./lib/worker');

const httpCall = httpCaller(32);

let nodes = [];
let ipBase = 1;
let isClosing = false;
/** Every client: {index, user, topic, wire, node, ws, cid, token, position, isReady, seen, maxSeq, duplicates, outOfOrder, subscribe}. */
const clients = [];
let watcher = null;

const stats = {
  reconnects: 0, // hellos after a client's first
  resumed: 0, // resumed: true with the same connection id
  newSessions: 0, // any other hello after the first
  resumeMs: [], // socket open to resumed hello
  newSessionMs: [], // socket open to the hello of a new session
  dialFailures: 0, // sockets that closed before their hello (a node down or draining)
  resubscribeFailures: 0, // a new session whose /v1 subscription failed on every node
  closeCodes: {}, // close codes of sockets that had their hello
  badHellos: [], // first frames that were not a hello with the cid
  lostTopics: 0, // topics a resumed hello listed in `lost` (SPEC §12.3)
  offline: 0, // `offline` statuses the watcher was sent after its first snapshot
  offlineUsers: new Set(),
};

// ---- one client ---------------------------------------------------------------

function resumeOffer(c) {
  const positions = c.position === null ? {} : { [c.wire]: c.position };
  return `${RESUME_OPT_IN}.${Buffer.from(JSON.stringify({ token: c.token, positions })).toString('base64url')}`;
}

/**
 * Subscribe the client's session through /v1 (its topic, or the watcher's users),
 * on its node first, then on the others: a node may be draining. True on a 204.
 */
async function subscribe(c) {
  for (let i = 0; i < nodes.length; i++) {
    const api = nodes[(c.node + i) % nodes.length].api;
    if ((await httpCall('PUT', `${api}/v1/connection/${c.cid}/${c.path}`, c.body)) === 204) return true;
  }
  return false;
}

/** Open a socket to the client's node; on close, open the next one (see the top of this file). */
function dial(c) {
  const startedAt = now();
  const ws = new WebSocket(
    `${nodes[c.node].url}?user=${c.user}`,
    [SUBPROTOCOL, c.token === null ? RESUME_OPT_IN : resumeOffer(c)],
    {
      perMessageDeflate: false,
      handshakeTimeout: 30_000,
      localAddress: `127.${ipBase}.${WORKER + 1}.${(c.index % 200) + 1}`,
    },
  );
  c.ws = ws;
  let hasHello = false;
  ws.on('error', () => undefined); // a close follows
  ws.on('message', (data) => {
    const frame = JSON.parse(data);
    if (hasHello) return onFrame(c, frame);
    hasHello = true;
    void onHello(c, ws, frame, now() - startedAt);
  });
  ws.on('close', (code) => {
    if (isClosing || c.ws !== ws) return;
    // A first dial that fails is counted by `start`, not retried.
    if (c.cid === null)
      return c.started({
        ok: false,
        why: hasHello ? `closed (${code}) before its subscription` : 'closed before hello',
      });
    c.isReady = false;
    if (hasHello) stats.closeCodes[code] = (stats.closeCodes[code] || 0) + 1;
    else stats.dialFailures++;
    // Another node, picked at random as a load balancer would while this one is gone.
    c.node = (c.node + 1 + Math.floor(Math.random() * (nodes.length - 1))) % nodes.length;
    const jitterMs = hasHello ? Math.random() * 1000 : 50 + Math.random() * 200;
    setTimeout(() => {
      if (!isClosing) dial(c);
    }, jitterMs);
  });
}

/** A hello: the first (subscribe), a resumed one (nothing to do), or a new session (subscribe again). */
async function onHello(c, ws, frame, helloMs) {
  const meta = frame[1] || {};
  const cid = frame[2] && frame[2].cid;
  const token = meta.resume && typeof meta.resume.token === 'string' ? meta.resume.token : null;
  if (frame[0] !== 'hello' || typeof cid !== 'string') {
    stats.badHellos.push(JSON.stringify(frame).slice(0, 120));
    return ws.terminate(); // counted, then reconnected (or, on a first dial, failed) by the close
  }
  const isFirst = c.cid === null;
  const isResumed = !isFirst && meta.resumed === true && cid === c.cid;
  c.token = token;
  if (!isFirst) {
    stats.reconnects++;
    if (isResumed) {
      stats.resumed++;
      stats.lostTopics += Array.isArray(meta.lost) ? meta.lost.length : 0;
    } else stats.newSessions++;
    (isResumed ? stats.resumeMs : stats.newSessionMs).push(helloMs);
  }
  if (!isResumed) {
    c.cid = cid;
    if (!(await subscribe(c))) {
      if (isFirst) return c.started({ ok: false, why: 'subscribe failed' });
      stats.resubscribeFailures++;
    }
    if (c.ws !== ws) return; // closed meanwhile: the next socket takes over
  }
  c.isReady = true;
  if (isFirst) c.started({ ok: true });
}

function onFrame(c, frame) {
  if (frame[0] === 'message') {
    const { seq } = frame[2];
    if (typeof frame[1].offset === 'number') c.position = [frame[1].offset, frame[1].epoch];
    if (c.seen.has(seq)) c.duplicates++;
    else {
      if (seq < c.maxSeq) c.outOfOrder++;
      c.seen.add(seq);
      c.maxSeq = Math.max(c.maxSeq, seq);
    }
  } else if (frame[0] === 'lattice' && frame[1].namespace === 'gateway.user') {
    for (const [user, value] of Object.entries(frame[2])) {
      const status = value.status_register && value.status_register[1];
      c.statuses.set(user, status);
      if (status === 'offline' && c.hasSnapshot) {
        stats.offline++;
        stats.offlineUsers.add(user);
      }
    }
    if (c.statuses.size >= c.watched) c.hasSnapshot = true;
  }
}

function client(index, user, node, path, body) {
  const c = {
    index,
    user,
    node,
    path,
    body,
    wire: path.replace(/^subscriptions\//, '').replace(/\//g, '.'),
    ws: null,
    cid: null,
    token: null,
    position: null,
    isReady: false,
  };
  Object.assign(c, {
    seen: new Set(),
    maxSeq: 0,
    duplicates: 0,
    outOfOrder: 0,
    statuses: new Map(),
    watched: 0,
    hasSnapshot: false,
  });
  const started = new Promise((resolve) => (c.started = resolve));
  return { c, started };
}

/** Dial and wait (bounded) for the first hello and subscription; a failed first dial is not retried. */
async function startOne(c, started, timeoutMs) {
  dial(c);
  const r = await Promise.race([started, sleep(timeoutMs).then(() => ({ ok: false, why: 'timeout' }))]);
  if (!r.ok) {
    const { ws } = c;
    c.ws = null; // its close must not reconnect it
    ws.terminate();
  }
  return r;
}

// ---- commands -----------------------------------------------------------------

async function start(o) {
  nodes = o.nodes;
  ipBase = o.ipBase;
  let next = 0;
  let failed = 0;
  const whys = {};
  const lane = async () => {
    while (next < o.count) {
      const index = o.offset + next++;
      const { c, started } = client(
        index,
        `d${index}`,
        index % nodes.length,
        `subscriptions/deploy/t${index % o.topics}`,
        undefined,
      );
      const r = await startOne(c, started, 30_000);
      if (r.ok) clients.push(c);
      else {
        failed++;
        whys[r.why] = (whys[r.why] || 0) + 1;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(o.concurrency, o.count) }, lane));
  return { opened: o.count - failed, failed, whys };
}

async function watch(o) {
  const { c, started } = client(1_000_000 + WORKER, 'watcher', o.node, 'users', JSON.stringify(o.users));
  c.watched = o.users.length;
  const r = await startOne(c, started, o.timeoutMs);
  if (!r.ok) throw new Error(`the watcher could not connect: ${r.why}`);
  watcher = c;
  const deadline = Date.now() + o.timeoutMs;
  while (!c.hasSnapshot && Date.now() < deadline) await sleep(20);
  const offlineAtStart = [...c.statuses.values()].filter((s) => s === 'offline').length;
  return { statuses: c.statuses.size, offlineAtStart, hasSnapshot: c.hasSnapshot };
}

function status() {
  const all = watcher === null ? clients : [...clients, watcher];
  return { ready: all.filter((c) => c.isReady).length, total: all.length };
}

async function report(o) {
  const topicOf = (c) => c.index % o.topics;
  const expected = (c) => (o.lastSeq[topicOf(c)] || 0) - (o.unpublished[topicOf(c)] || []).length;
  const received = (c) => [...c.seen].filter((s) => s <= (o.lastSeq[topicOf(c)] || 0)).length;
  const deadline = Date.now() + o.timeoutMs;
  while (clients.some((c) => received(c) < expected(c)) && Date.now() < deadline) await sleep(50);
  let lost = 0;
  let clientsWithLoss = 0;
  for (const c of clients) {
    const missing = expected(c) - received(c);
    if (missing > 0) {
      lost += missing;
      clientsWithLoss++;
    }
  }
  return {
    clients: clients.length,
    delivered: clients.reduce((s, c) => s + c.seen.size, 0),
    lost,
    clientsWithLoss,
    duplicates: clients.reduce((s, c) => s + c.duplicates, 0),
    outOfOrder: clients.reduce((s, c) => s + c.outOfOrder, 0),
    notReady: clients.filter((c) => !c.isReady).length + (watcher !== null && !watcher.isReady ? 1 : 0),
    ...stats,
    offlineUsers: [...stats.offlineUsers],
  };
}

const commands = {
  start,
  watch,
  status,
  report,
  close() {
    isClosing = true;
    for (const c of watcher === null ? clients : [...clients, watcher]) if (c.ws !== null) c.ws.terminate();
    return {};
  },
};

serve(commands);
