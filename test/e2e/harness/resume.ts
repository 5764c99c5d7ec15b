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

/** Drop the TCP connection without a close frame, as a network loss does, and await the local close. */
export async function dropConnection(client: WsClient): Promise<void> {
  client.socket.terminate();
  await client.closed();
}
