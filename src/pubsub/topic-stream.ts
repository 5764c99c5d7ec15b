import { Connection } from '../connections/connection';
import { KeptHistory } from './topic-history';
import { TopicPosition } from '../protocol/topic-position';

/** SPEC §12.3: what a resumed session gets: the topics it lost, then the frames it missed. */
export interface ReplayPlan {
  /** Wire form (`a.b`). */
  readonly lostTopics: string[];
  readonly frames: Buffer[];
  /** Per topic (path form), where the replay reached: live frames up to there are not sent again. */
  readonly upTo: Map<string, TopicPosition<string>>;
}

/** Where a client says it stands in each topic (path form) when it resumes. */
export type ClientPositions = ReadonlyMap<string, TopicPosition<string>>;

/**
 * How a publish reaches this node's subscribers, and what a resume gets back
 * (STYLE rule 11): chosen once in the module's factory ({@link topicStreamFor}),
 * one file per mode:
 * - `PlainTopicStream`: no history (RESUME_WINDOW=0): encode once, send to the other nodes, deliver;
 * - `MemoryTopicStream`: one node, bounded history in memory (SPEC §12.4);
 * - `RedisTopicStream`: cluster mode, history in Redis: numbered there, delivered in offset order,
 *   gaps filled and missed messages caught up after a reconnection (SPEC §12.4, §13.1).
 */
export abstract class TopicStream {
  /** Publishes are numbered and kept (SPEC §12.4): subscribe positions of resumable subscribers matter. */
  abstract readonly isNumbered: boolean;

  /** Number (with history), keep, send to the other nodes, deliver here. `payload` is validated JSON bytes. */
  abstract publish(topic: string, payload: Buffer): Promise<void>;

  /** A message on a topic's channel, published through another node. */
  abstract received(topic: string, message: Buffer): void;

  /** Where the topic stands, when this node knows it without asking (a new resumable subscriber starts there). */
  abstract positionNow(topic: string): TopicPosition;

  /**
   * Once this node listens to the topic's channel: a topic new here, or a new
   * resumable `subscriber`, learns where the topic stands (cluster mode).
   */
  abstract joined(topic: string, subscriber: Connection | null): Promise<void>;

  /** SPEC §12.3: per subscribed topic of a resumed session, the frames it missed or the topic as lost. */
  abstract replay(subscriber: Connection, from: ClientPositions): Promise<ReplayPlan>;

  /** Where a topic stands now, read where the history lives (offset 0, no epoch, when none is shared). */
  abstract currentPosition(topic: string): Promise<TopicPosition>;

  /** SPEC §15.2: where a topic's history stands and how many messages it keeps; null without history. */
  abstract historyOf(topic: string): Promise<KeptHistory> | KeptHistory | null;

  /** This node no longer has subscribers of the topic. */
  abstract left(topic: string): void;

  /** Timers stopped (app shutdown). */
  abstract stop(): void;
}
