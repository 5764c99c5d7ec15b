import { OPCODE, closePayload, rawFrame } from '../e2e/harness/raw-frames';
import { RawWsClient } from '../e2e/harness/raw-ws';
import { LoadClient, SEED, rng } from './lib/clients';
import { Expectation, RESULT, expectText } from './lib/frame-oracle';
import { GatewayProcess, sampleRss } from './lib/gateway';
import { sized } from './lib/profile';
import { Checks, mib, record } from './lib/report';
import { LoadUpstream } from './lib/upstream';

const MAX_FRAME_BYTES = 16 * 1024;
/** ws refuses from the header anything over this (public-listener.ts: 2 × limit + 1 KiB). */
const WS_MAX_PAYLOAD = MAX_FRAME_BYTES * 2 + 1024;
const TARGET_FRAMES = sized({ short: 12_000, full: 105_000 });
const CONCURRENCY = 24;
const RSS_LIMIT_BYTES = 400 * 1024 * 1024;

type Rng = ReturnType<typeof rng>;

/** One step of an attacking connection: bytes to write and what the gateway must do. */
interface Step {
  readonly label: string;
  readonly bytes: Buffer[];
  readonly expect: Expectation | { kind: 'nothing' };
}

function randomJson(r: Rng, depth = 0): unknown {
  switch (r.int(depth > 3 ? 5 : 8)) {
    case 0:
      return r.int(1000) - 500;
    case 1:
      return r.pick(['', 'a', 'é😀', '\u0000', '"\\', 'x'.repeat(r.int(300))]);
    case 2:
      return r.pick([true, false, null]);
    case 3:
      return r.pick([1e308, -1e-308, 2 ** 53 + 2, 0.1]);
    case 4:
      return r.int(2) === 0 ? [] : {};
    case 5:
      return Array.from({ length: r.int(5) }, () => randomJson(r, depth + 1));
    default:
      return Object.fromEntries(
        Array.from({ length: r.int(4) }, (_, i) => [
          r.pick(['k', 'request_id', '__proto__', 'error_kind', `f${i}`]),
          randomJson(r, depth + 1),
        ]),
      );
  }
}

const text = (payload: Buffer, maxFrameBytes = MAX_FRAME_BYTES): Step['expect'] => expectText(payload, maxFrameBytes);

function textStep(label: string, payload: Buffer, r: Rng): Step {
  // A third of text messages go out fragmented: same meaning, more frames.
  if (payload.length > 2 && r.chance(0.33)) {
    const cut = 1 + r.int(payload.length - 1);
    const bytes = [
      rawFrame(OPCODE.text, payload.subarray(0, cut), { fin: false }),
      rawFrame(OPCODE.continuation, payload.subarray(cut)),
    ];
    return { label: label + ' (fragmented)', bytes, expect: text(payload) };
  }
  return { label, bytes: [rawFrame(OPCODE.text, payload)], expect: text(payload) };
}

/** A message that keeps the connection open (a reply, or nothing for a ping); mostly calls. */
function openStep(r: Rng, id: number): Step {
  const call = (): unknown[] => [
    r.pick(['echo', 'e.x', 'a-b_c.d', 'rooms.history']),
    { request_id: id, ...(r.chance(0.3) ? { trace: randomJson(r) } : {}) },
    [randomJson(r)],
    { k: randomJson(r) },
  ];
  const deep = (n: number): string => '['.repeat(n) + ']'.repeat(n);
  switch (r.int(10)) {
    case 0:
    case 1:
      return textStep('valid call', Buffer.from(JSON.stringify(call())), r);
    case 2: {
      const bytes = Buffer.from(JSON.stringify(call()));
      for (let n = 1 + r.int(3); n > 0; n--)
        bytes[r.int(bytes.length)] = r.pick([0x5b, 0x5d, 0x22, 0x2c, 0x7b, 0x7d, 0x31, 0x20]);
      return textStep('mutated call', bytes, r);
    }
    case 3: {
      const n = r.pick([127, 128, 129, 500, 5_000]);
      const where = r.int(3);
      const body =
        where === 0
          ? `["echo",{"request_id":${id},"d":${deep(n)}},[],{}]`
          : where === 1
            ? `["echo",{"request_id":${id}},${deep(n)},{}]`
            : `["echo",{"request_id":${id}},[],{"d":${deep(n)}}]`;
      return textStep(`nested ${n}`, Buffer.from(body), r);
    }
    case 4:
      return textStep(
        'huge numbers',
        Buffer.from(
          `["echo",{"request_id":${r.pick([id, '1e400', '-1', '1.5', '9007199254740993'])}},[1e400,-1e400,123456789012345678901234567890,1e-400],{"n":-0}]`,
        ),
        r,
      );
    case 5:
      return textStep(
        'bad method or id',
        Buffer.from(
          JSON.stringify([
            r.pick(['gateway.x', 'a..b', '', 'é', 'echo']),
            { request_id: r.pick([id, -1, 'x'.repeat(37), 'a b', null, 1.5, [1]]) },
            [],
            {},
          ]),
        ),
        r,
      );
    case 6:
      return {
        label: 'ping',
        bytes: [rawFrame(OPCODE.ping, Buffer.from('p'.repeat(r.int(125))))],
        expect: { kind: 'nothing' },
      };
    case 7:
      return {
        label: 'unsolicited pong',
        bytes: [rawFrame(OPCODE.pong, Buffer.from('q'))],
        expect: { kind: 'nothing' },
      };
    default:
      return textStep('valid call', Buffer.from(JSON.stringify(call())), r);
  }
}

/** The last message of a connection: every fault of SPEC §4.1 / RFC 6455, or a clean close. */
function lastStep(r: Rng): Step {
  const close = (code: number, fatal: boolean): Step['expect'] => ({ kind: 'close', code, fatal });
  const call = Buffer.from('["echo",{"request_id":1},[],{}]');
  const steps: Array<() => Step> = [
    () => ({
      label: 'random JSON',
      bytes: [rawFrame(OPCODE.text, Buffer.from(JSON.stringify(randomJson(r))))],
      expect: close(1007, true),
    }),
    () => ({
      label: 'not JSON',
      bytes: [rawFrame(OPCODE.text, Buffer.from('["echo",{"request_id":1},[],{}'))],
      expect: close(1007, true),
    }),
    () => {
      const bytes = Buffer.from(Array.from({ length: 1 + r.int(200) }, () => r.int(256)));
      return { label: 'random bytes', bytes: [rawFrame(OPCODE.text, bytes)], expect: text(bytes) };
    },
    () => ({
      label: 'invalid UTF-8',
      bytes: [rawFrame(OPCODE.text, Buffer.from([0x5b, 0x22, 0xed, 0xa0, 0x80, 0x22, 0x5d]))],
      expect: close(1007, true),
    }),
    () => ({ label: 'binary', bytes: [rawFrame(OPCODE.binary, call)], expect: close(1003, true) }),
    () => ({
      label: 'oversized',
      bytes: [
        rawFrame(
          OPCODE.text,
          Buffer.from(
            JSON.stringify(['echo', { request_id: 1 }, ['x'.repeat(MAX_FRAME_BYTES + r.int(MAX_FRAME_BYTES))], {}]),
          ),
        ),
      ],
      expect: close(1009, true),
    }),
    () => ({
      label: 'declared far oversized',
      bytes: [rawFrame(OPCODE.text, Buffer.alloc(16), { declaredLength: WS_MAX_PAYLOAD + 1 + r.int(2 ** 40) })],
      expect: close(1009, true),
    }),
    () => ({ label: 'unmasked', bytes: [rawFrame(OPCODE.text, call, { masked: false })], expect: close(1002, false) }),
    () => ({
      label: 'RSV bits',
      bytes: [rawFrame(OPCODE.text, call, { rsv: 1 + r.int(7) })],
      expect: close(1002, false),
    }),
    () => ({
      label: 'reserved opcode',
      bytes: [rawFrame(r.pick([3, 4, 5, 6, 7, 0xb, 0xc, 0xd, 0xe, 0xf]), call)],
      expect: close(1002, false),
    }),
    () => ({
      label: 'ping over 125 bytes',
      bytes: [rawFrame(OPCODE.ping, Buffer.alloc(126 + r.int(200)))],
      expect: close(1002, false),
    }),
    () => ({
      label: 'fragmented ping',
      bytes: [rawFrame(OPCODE.ping, Buffer.from('x'), { fin: false })],
      expect: close(1002, false),
    }),
    () => ({ label: 'orphan continuation', bytes: [rawFrame(OPCODE.continuation, call)], expect: close(1002, false) }),
    () => ({
      label: 'text inside a fragmented text',
      bytes: [rawFrame(OPCODE.text, call, { fin: false }), rawFrame(OPCODE.text, call)],
      expect: close(1002, false),
    }),
    () => ({
      label: 'close with 1 byte',
      bytes: [rawFrame(OPCODE.close, Buffer.from([3]))],
      expect: close(1002, false),
    }),
    () => ({
      label: 'close with a bad code',
      bytes: [rawFrame(OPCODE.close, closePayload(r.pick([0, 999, 1004, 1005, 1006, 1015, 2000, 5000])))],
      expect: close(1002, false),
    }),
    () => ({
      label: 'close with invalid UTF-8 reason',
      bytes: [rawFrame(OPCODE.close, closePayload(1000, Buffer.from([0xc3, 0x28])))],
      expect: close(1007, true),
    }),
    () => {
      const code = r.pick([1000, 1001, 3000, 4999]);
      return {
        label: 'clean close',
        bytes: [rawFrame(OPCODE.close, closePayload(code, Buffer.from('bye')))],
        expect: close(code, false),
      };
    },
  ];
  return r.pick(steps)();
}

const replyKey = (frame: unknown[]): string =>
  frame[0] === 'result' ? RESULT : frame[0] === 'error' ? String(frame[2]) : `unexpected ${String(frame[0])}`;

describe('hostile WebSocket input (issue 11)', () => {
  let gateway: GatewayProcess;
  let upstream: LoadUpstream;
  afterAll(async () => {
    await gateway?.stop();
    await upstream?.close();
  });

  it(`answers ≥ ${TARGET_FRAMES} hostile frames as SPEC §4.1 says while a canary's calls all succeed, within bounded RSS`, async () => {
    upstream = await LoadUpstream.start();
    gateway = await GatewayProcess.start({
      UPSTREAM_URL: upstream.url,
      MAX_FRAME_BYTES: String(MAX_FRAME_BYTES),
      PING_INTERVAL: '60s',
    });
    const r = rng(SEED);
    const checks = new Checks();
    const rss = sampleRss(gateway);

    const canary = await LoadClient.open(gateway.wsUrl, 'user=canary');
    let canaryCalls = 0;
    const canaryFailures: string[] = [];
    let attacking = true;
    const canaryLoop = (async () => {
      while (attacking) {
        const args = [canaryCalls, 'c'.repeat(canaryCalls % 50)];
        try {
          const reply = await canary.call('echo', args, {}, 10_000);
          if (reply[0] !== 'result' || JSON.stringify((reply[2] as { args: unknown }).args) !== JSON.stringify(args))
            canaryFailures.push(JSON.stringify(reply).slice(0, 200));
        } catch (err) {
          canaryFailures.push((err as Error).message);
        }
        canaryCalls++;
      }
    })();

    let frames = 0;
    let connections = 0;
    const closes = new Map<string, number>();
    const mismatches: string[] = [];
    const started = Date.now();
    const attack = async (): Promise<void> => {
      const id = connections++;
      const raw = await RawWsClient.open(gateway.publicPort, [`X-Attacker: ${id}`], `/?user=attacker${id % 50}`);
      try {
        await raw.next(10_000); // hello
        const opens = Array.from({ length: 20 + r.int(60) }, (_, i) => openStep(r, i + 1));
        const expected: string[] = [];
        for (const step of opens) {
          // A mutated or random message may still be fatal: it then ends the connection's run.
          if (step.expect.kind === 'close') {
            opens.length = opens.indexOf(step);
            break;
          }
          if (step.expect.kind === 'reply') expected.push(step.expect.reply);
        }
        for (const step of opens) for (const bytes of step.bytes) (raw.write(bytes), frames++);
        const got: string[] = [];
        while (got.length < expected.length) got.push(replyKey(await raw.next(15_000)));
        if (JSON.stringify([...got].sort()) !== JSON.stringify([...expected].sort()))
          mismatches.push(`conn ${id}: expected ${JSON.stringify(expected)} got ${JSON.stringify(got)}`);
        const last = lastStep(r);
        for (const bytes of last.bytes) (raw.write(bytes), frames++);
        const before = raw.frames.length;
        if (last.expect.kind === 'close') {
          const closed = await raw.closed(10_000);
          const key = `${last.label} → ${closed.code}`;
          closes.set(key, (closes.get(key) ?? 0) + 1);
          const fatal = raw.frames.slice(before).filter((f) => f[0] === 'fatal_error');
          if (closed.code !== last.expect.code || fatal.length !== (last.expect.fatal ? 1 : 0)) {
            mismatches.push(
              `conn ${id}: ${last.label} expected close ${last.expect.code}${last.expect.fatal ? ' after fatal_error' : ''}, got ${closed.code} ${JSON.stringify(closed.reason)} after ${JSON.stringify(fatal)}`,
            );
          }
        }
      } finally {
        await raw.close();
      }
    };
    const worker = async (): Promise<void> => {
      while (frames < TARGET_FRAMES)
        await attack().catch((err: Error) => void mismatches.push(`attack failed: ${err.message}`));
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    attacking = false;
    await canaryLoop;
    const attackSeconds = (Date.now() - started) / 1000;
    const afterConnections = await (async () => {
      for (const deadline = Date.now() + 10_000; Date.now() < deadline;) {
        const open = (await gateway.gauges()).gateway_connections;
        if (open === 1) return open;
        await canary.call('echo'); // an ordering barrier with a bounded wait, not a sleep
      }
      return (await gateway.gauges()).gateway_connections;
    })();
    const rssFigures = rss.stop();

    checks.check('every hostile frame got its SPEC reply or close', mismatches.length === 0, mismatches.slice(0, 10));
    checks.check(`at least ${TARGET_FRAMES} frames sent`, frames >= TARGET_FRAMES, frames);
    checks.check(
      'every canary call succeeded',
      canaryFailures.length === 0 && canaryCalls > 0,
      canaryFailures.slice(0, 5),
    );
    checks.check('canary still connected', canary.isOpen);
    checks.check('only the canary left connected', afterConnections === 1, afterConnections);
    checks.check('no error-level log line', gateway.errorLines.length === 0, gateway.errorLines.slice(0, 3));
    checks.check('process alive', gateway.alive, gateway.stderr.slice(0, 500));
    checks.check(
      `RSS peak under ${mib(RSS_LIMIT_BYTES)} MiB`,
      rssFigures.peakBytes < RSS_LIMIT_BYTES,
      mib(rssFigures.peakBytes),
    );
    record('hostile-ws', {
      seed: SEED,
      frames,
      connections,
      attack_seconds: attackSeconds,
      frames_per_second: Math.round(frames / attackSeconds),
      canary_calls: canaryCalls,
      canary_failures: canaryFailures.length,
      closes: Object.fromEntries([...closes].sort()),
      rss_mib: { start: mib(rssFigures.startBytes), peak: mib(rssFigures.peakBytes), end: mib(rssFigures.lastBytes) },
      log_levels: Object.fromEntries(gateway.levelCounts),
      checks: checks.summary,
    });
    await canary.close();
    checks.assertAll();
  });
});
