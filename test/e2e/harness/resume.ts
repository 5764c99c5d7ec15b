import { expectNothingMore } from './barrier';
import { FakeUpstream } from './fake-upstream';
import { TestGateway } from './gateway';
import { connectionIdOf } from './v1';
import { Frame, PROTOCOL, WsClient } from './ws-client';

/** The extra subprotocol that opts a connection into a resumable session (SPEC §12.1). */
export const RESUME_OPT_IN = 'gateway-resume';

/** A topic position as the client keeps it: `[offset, epoch]` (SPEC §12.4). */
export type Position = [number, string];

/** The `resume` object of a hello's meta. */
export interface ResumeMeta {
  readonly token: string;
  readonly window: number;
}

/** The subprotocol list of a client that opts in without resuming. */
export function optInProtocols(): string[] {
  return [PROTOCOL, RESUME_OPT_IN];
}

/** An opted-in connection: its client, hello, the hello's resume object and the connection id. */
export interface OptedIn {
  readonly client: WsClient;
  readonly hello: Frame;
  readonly resume: ResumeMeta;
  readonly cid: string;
}

/** Where an opt-in on any node (a child process, a node of a shared upstream) is authorized and kept. */
export interface OptInAt {
  /** The upstream that authorizes the handshake: the connection id is read from its request. */
  readonly upstream: FakeUpstream;
  /** The spec's clients, closed by it (a ProcessCluster is one of these). */
  readonly clients: WsClient[];
}

let optIns = 0;

/**
 * Connect as `user`, opted into a resumable session (SPEC §12.1), and await
 * hello. The query `user=<user>&o=<n>` is unique, so the authorization read
 * for the connection id is this handshake's. On a TestGateway without `at`,
 * the gateway keeps the client and reads its own upstream.
 */
export async function optIn(node: TestGateway, user: string): Promise<OptedIn>;
export async function optIn(node: { readonly wsUrl: string }, user: string, at: OptInAt): Promise<OptedIn>;
export async function optIn(
  node: TestGateway | { readonly wsUrl: string },
  user: string,
  at?: OptInAt,
): Promise<OptedIn> {
  const query = `user=${user}&o=${++optIns}`;
  const options = { query, protocols: optInProtocols() };
  // The overloads give a TestGateway whenever `at` is missing.
  const gateway = node as TestGateway;
  const { client, hello } = at === undefined ? await gateway.hello(options) : await WsClient.hello(node.wsUrl, options);
  at?.clients.push(client);
  const cid = await connectionIdOf(at?.upstream ?? gateway.upstream, query);
  return { client, hello, resume: resumeOf(hello), cid };
}

/** `gateway-resume.<base64url of the compact JSON offer>` (SPEC §12.1). */
export function resumeProtocol(offer: unknown): string {
  return `${RESUME_OPT_IN}.${Buffer.from(JSON.stringify(offer)).toString('base64url')}`;
}

/** The subprotocol list of a client resuming with `token` and its `positions` (topics in wire form). */
export function resumeProtocols(token: string, positions: Record<string, Position> = {}): string[] {
  return [PROTOCOL, resumeProtocol({ token, positions })];
}

/** The hello's meta, checked to be a hello. */
export function helloMeta(hello: Frame): Record<string, unknown> {
  if (hello[0] !== 'hello') throw new Error('expected hello, got ' + JSON.stringify(hello));
  return hello[1];
}

/** The hello's `resume` object, checked for shape. */
export function resumeOf(hello: Frame): ResumeMeta {
  const resume = helloMeta(hello).resume as ResumeMeta | undefined;
  if (resume === undefined || typeof resume.token !== 'string' || typeof resume.window !== 'number') {
    throw new Error('hello without a resume object: ' + JSON.stringify(hello));
  }
  return resume;
}

/** The message frame's position, checked to be a message of `topic`. */
export function positionOf(frame: Frame, topic: string): Position {
  if (frame[0] !== 'message' || frame[1].topic !== topic)
    throw new Error(`expected a message on ${topic}, got ${JSON.stringify(frame)}`);
  return [frame[1].offset as number, frame[1].epoch as string];
}

/**
 * SPEC §13.1 across a rollback (or a restart) between messages 5 and 6 of
 * `{ n: 1..8 }` on `topic`: each legacy client got the eight once, in order;
 * each resumable one too, 1-5 at offsets 1-5 of one epoch and 6-8 at offsets
 * 1-3 of another ((epoch, offset) names one message forever); nothing more.
 */
export async function expectEightAcrossRollback(
  topic: string,
  legacy: readonly WsClient[],
  resumable: readonly WsClient[],
): Promise<void> {
  const numbers = [1, 2, 3, 4, 5, 6, 7, 8];
  const eight = async (client: WsClient): Promise<Frame[]> => {
    const out: Frame[] = [];
    while (out.length < numbers.length) out.push(await client.next(5000));
    return out;
  };
  for (const client of legacy) {
    expect(await eight(client)).toEqual(numbers.map((n) => ['message', { topic }, { n }]));
    await expectNothingMore(client);
  }
  for (const client of resumable) {
    const got = await eight(client);
    expect(got.map((frame) => frame[2])).toEqual(numbers.map((n) => ({ n })));
    const positions = got.map((frame) => positionOf(frame, topic));
    const [before, after] = [positions.slice(0, 5), positions.slice(5)];
    expect(before.map(([offset]) => offset)).toEqual([1, 2, 3, 4, 5]);
    expect(new Set(before.map(([, epoch]) => epoch)).size).toBe(1);
    expect(new Set(after.map(([, epoch]) => epoch)).size).toBe(1);
    expect(after[0][1]).not.toBe(before[0][1]);
    expect(after.map(([offset]) => offset)).toEqual([1, 2, 3]);
    await expectNothingMore(client);
  }
}

/** Drop the TCP connection without a close frame, as a network loss does, and await the local close. */
export async function dropConnection(client: WsClient): Promise<void> {
  client.socket.terminate();
  await client.closed();
}
