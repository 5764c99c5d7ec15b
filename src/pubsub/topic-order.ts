import type { TopicPosition } from '../protocol/topic-position';
import type { LoggedMessage } from './topic-log';

/** The range a node must read from the history: offsets after `after` and before `before`, in `epoch`. */
export interface GapFill {
  readonly epoch: string;
  readonly after: number;
  readonly before: number;
}

/** What to do after a message arrived or a fill came back: deliver `ready` in this order, then start `fill` if any. */
export interface OrderStep {
  readonly ready: readonly LoggedMessage[];
  readonly fill: GapFill | null;
}

interface TopicState {
  /** null: the topic had no history when this node joined it; the first epoch seen is taken. */
  epoch: string | null;
  /** The last offset delivered (or skipped). */
  last: number;
  /** Messages that arrived beyond a gap, by offset. */
  readonly waiting: Map<number, LoggedMessage>;
  isFilling: boolean;
}

const NOTHING: OrderStep = { ready: [], fill: null };

/**
 * SPEC §12.4 "Order and gaps", cluster mode: per topic this node listens to,
 * the last offset it delivered. A message beyond the next offset waits while
 * the gap is read from the history (its pub/sub message was lost, or is still
 * on its way from another node); what the history no longer holds is skipped.
 * Duplicates (a filled message whose pub/sub copy arrives later) are dropped.
 * A new epoch (Redis lost the history) starts the count again. Pure.
 */
export class TopicOrder {
  private readonly states = new Map<string, TopicState>();

  knows(topic: string): boolean {
    return this.states.has(topic);
  }

  /** Where this node starts on `topic` (it just joined the channel), unless it knows already. */
  startAt(topic: string, position: TopicPosition): void {
    if (!this.states.has(topic))
      this.states.set(topic, { epoch: position.epoch, last: position.offset, waiting: new Map(), isFilling: false });
  }

  /** Every topic this node follows. */
  topics(): IterableIterator<string> {
    return this.states.keys();
  }

  /**
   * Where the history stands now (read after a Redis reconnect): a fill for
   * what this node missed meanwhile, if anything. A new epoch starts the
   * count again.
   */
  catchUp(topic: string, position: TopicPosition): OrderStep {
    const state = this.states.get(topic);
    if (state === undefined || position.epoch === null) return NOTHING;
    if (state.epoch !== position.epoch) {
      state.epoch = position.epoch;
      state.last = 0;
      state.waiting.clear();
      state.isFilling = false;
    }
    if (position.offset <= state.last || state.isFilling) return NOTHING;
    state.isFilling = true;
    return { ready: [], fill: { epoch: position.epoch, after: state.last, before: position.offset + 1 } };
  }

  /** Whether this node delivered offsets of `position`'s epoch beyond it (the history was rolled back, SPEC §13.1). */
  isAhead(topic: string, position: { readonly epoch: string; readonly offset: number }): boolean {
    const state = this.states.get(topic);
    return state !== undefined && state.epoch === position.epoch && state.last > position.offset;
  }

  /** This node no longer listens to `topic`. */
  forget(topic: string): void {
    this.states.delete(topic);
  }

  arrive(topic: string, message: LoggedMessage): OrderStep {
    let state = this.states.get(topic);
    if (state === undefined) {
      // Nothing known (it arrived before the join's position read): it is where this node starts.
      this.states.set(
        topic,
        (state = { epoch: message.epoch, last: message.offset - 1, waiting: new Map(), isFilling: false }),
      );
    } else if (state.epoch === null) {
      state.epoch = message.epoch;
    } else if (state.epoch !== message.epoch) {
      state.epoch = message.epoch;
      state.last = 0;
      state.waiting.clear();
      state.isFilling = false;
    }
    if (message.offset <= state.last) return NOTHING;
    if (message.offset !== state.last + 1) {
      state.waiting.set(message.offset, message);
      return { ready: [], fill: this.nextFill(state) };
    }
    state.last = message.offset;
    const ready = [message];
    this.drain(state, ready);
    return { ready, fill: this.nextFill(state) };
  }

  /** Whether `request` still has offsets this node has neither delivered nor skipped. */
  isStillMissing(topic: string, request: GapFill): boolean {
    const state = this.states.get(topic);
    return state !== undefined && state.epoch === request.epoch && state.last < request.before - 1;
  }

  /**
   * The history's answer to `request`: `messages` (offsets within it, in
   * order; empty when the read failed). Everything before `request.before`
   * is then delivered or skipped.
   */
  filled(topic: string, request: GapFill, messages: readonly LoggedMessage[]): OrderStep {
    const state = this.states.get(topic);
    if (state === undefined) return NOTHING;
    state.isFilling = false;
    if (state.epoch !== request.epoch) return { ready: [], fill: this.nextFill(state) };
    const ready: LoggedMessage[] = [];
    for (const message of messages) {
      if (message.offset <= state.last || message.offset >= request.before) continue;
      state.last = message.offset;
      state.waiting.delete(message.offset);
      ready.push(message);
    }
    if (state.last < request.before - 1) state.last = request.before - 1;
    this.drain(state, ready);
    return { ready, fill: this.nextFill(state) };
  }

  /** Move on through the waiting messages that now follow without a gap. */
  private drain(state: TopicState, ready: LoggedMessage[]): void {
    for (let next = state.waiting.get(state.last + 1); next !== undefined; next = state.waiting.get(state.last + 1)) {
      state.waiting.delete(next.offset);
      state.last = next.offset;
      ready.push(next);
    }
    for (const offset of state.waiting.keys()) if (offset <= state.last) state.waiting.delete(offset);
  }

  /** A fill for the first gap, unless one is under way or there is none. */
  private nextFill(state: TopicState): GapFill | null {
    if (state.isFilling || state.waiting.size === 0 || state.epoch === null) return null;
    let before = Infinity;
    for (const offset of state.waiting.keys()) if (offset < before) before = offset;
    state.isFilling = true;
    return { epoch: state.epoch, after: state.last, before };
  }
}
