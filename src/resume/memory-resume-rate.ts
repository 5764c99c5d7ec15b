import { ConnectionRegistry } from '../connections/connection-registry';
import { ResumeRate } from './resume-rate';
import { ResumeWindowCounter } from './resume-window-counter';

/**
 * One node (SPEC §12.2): resumes that succeeded counted in memory; a
 * handshake naming a session this node does not hold is never refused (its
 * token fails anyway).
 */
export class MemoryResumeRate extends ResumeRate {
  private readonly counter = new ResumeWindowCounter();

  constructor(private readonly registry: ConnectionRegistry) {
    super();
  }

  admit(connectionId: string): number {
    if (this.registry.get(connectionId)?.isResumable !== true) return 0;
    return this.counter.waitMs(connectionId, Date.now());
  }

  resumed(connectionId: string): void {
    this.counter.hit(connectionId, Date.now());
  }
}
