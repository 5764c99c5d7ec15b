import { Injectable } from '@nestjs/common';
import { Connection } from '../connections/connection';
import { LatticeService } from '../lattice/lattice.service';
import { GatewayMetrics } from '../metrics/gateway-metrics';
import { encodeHello } from '../protocol/frames';
import type { ReplayPlan } from '../pubsub/topic-stream';
import { PresenceService } from '../users-lattice/presence.service';
import { ClientFramesService } from './client-frames.service';

/** What an authorized connection receives first, in the order SPEC §3 gives. */
@Injectable()
export class HelloSequenceService {
  private readonly helloSent;
  private readonly replayed;
  private readonly lost;

  constructor(
    private readonly frames: ClientFramesService,
    private readonly lattices: LatticeService,
    private readonly presence: PresenceService,
    metrics: GatewayMetrics,
  ) {
    this.helloSent = metrics.framesSent.labels('hello');
    this.replayed = metrics.replayedMessages;
    this.lost = metrics.lostTopics;
  }

  /** hello → buffered messages → lattice snapshots → users snapshot → early client frames. */
  send(connection: Connection, metaJson: string): void {
    const early = connection.takeEarly();
    connection.send(encodeHello(connection.identity!.json, metaJson));
    this.helloSent.inc();
    for (const frame of early.messages) connection.send(frame);
    this.lattices.sendSnapshots(connection);
    this.presence.sendSnapshot(connection);
    for (const frame of early.frames) this.frames.onFrame(connection, frame.data, frame.isBinary);
  }

  /**
   * SPEC §12.3, a resumed session held while its replay was read: hello →
   * the missed messages → lattice snapshots → users snapshot → live traffic
   * held meanwhile (beyond the replay only) → early client frames.
   */
  sendResumed(connection: Connection, metaJson: string, plan: ReplayPlan): void {
    const held = connection.endReplayHold(plan.upTo);
    const early = connection.takeEarly();
    connection.send(encodeHello(connection.identity!.json, metaJson));
    this.helloSent.inc();
    for (const frame of plan.frames) connection.send(frame);
    this.replayed.inc(plan.frames.length);
    this.lost.inc(plan.lostTopics.length);
    this.lattices.sendSnapshots(connection);
    this.presence.sendSnapshot(connection);
    for (const frame of early.messages) connection.send(frame);
    for (const positioned of held) connection.send(positioned.frame);
    for (const frame of early.frames) this.frames.onFrame(connection, frame.data, frame.isBinary);
  }
}
