import { Broker } from '../cluster/broker';
import { messageFrameHead } from '../protocol/frames';
import { pathToWire } from '../protocol/identifiers';
import { encodeMessageFrame } from './message-frame';
import { NO_POSITION, TopicPosition } from '../protocol/topic-position';
import { TopicSubscribers } from './topic-subscribers';
import { ReplayPlan, TopicStream } from './topic-stream';

const RESOLVED = Promise.resolve();
const NOTHING_SHARED = Promise.resolve(NO_POSITION);

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

  positionNow(): TopicPosition {
    return NO_POSITION;
  }

  joined(): Promise<void> {
    return RESOLVED;
  }

  replay(): Promise<ReplayPlan> {
    return Promise.resolve({ lostTopics: [], frames: [], upTo: new Map() });
  }

  currentPosition(): Promise<TopicPosition> {
    return NOTHING_SHARED;
  }

  historyOf(): null {
    return null;
  }

  left(): void {}

  stop(): void {}
}
