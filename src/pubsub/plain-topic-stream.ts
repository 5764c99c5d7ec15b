import { Broker } from '../cluster/broker';
import { messageFrameHead } from '../protocol/frames';
import { pathToWire } from '../protocol/identifiers';
import { encodeMessageFrame } from './message-frame';
import { HistoryPosition } from './topic-history';
import { TopicSubscribers } from './topic-subscribers';
import { NO_HISTORY, ReplayPlan, TopicStream } from './topic-stream';

const RESOLVED = Promise.resolve();
const NO_POSITION = Promise.resolve([0, null] as const);

/**
 * RESUME_WINDOW=0 (one node or cluster): no history. A publish is encoded
 * once, the same bytes go to the other nodes that have subscribers (none on
 * one node) and to every subscriber here.
 */
export class PlainTopicStream extends TopicStream {
  readonly isNumbered = false;

  constructor(
    private readonly broker: Broker,
    private readonly subscribers: TopicSubscribers,
  ) {
    super();
  }

  publish(topic: string, payload: Buffer): Promise<void> {
    const frame = encodeMessageFrame(messageFrameHead(pathToWire(topic)), payload);
    // Other nodes first: their fan-out then runs while this node does its own.
    this.broker.send('t', topic, frame);
    this.subscribers.deliver(topic, frame);
    return RESOLVED;
  }

  received(topic: string, message: Buffer): void {
    this.subscribers.deliver(topic, message);
  }

  positionNow(): HistoryPosition {
    return NO_HISTORY;
  }

  joined(): Promise<void> {
    return RESOLVED;
  }

  replay(): Promise<ReplayPlan> {
    return Promise.resolve({ lostTopics: [], frames: [], upTo: new Map() });
  }

  currentPosition(): Promise<readonly [number, string | null]> {
    return NO_POSITION;
  }

  historyOf(): null {
    return null;
  }

  left(): void {}

  stop(): void {}
}
