import { ConnectionRegistry } from '../connections/connection-registry';
import { ResumeRate } from './resume-rate';
import { ResumeWindowCounter } from './resume-window-counter';

/**
 * One node (SPEC §12.2): resumes counted in memory, only for resumable
 * sessions this node holds (a token naming any other id fails anyway), so a
 * forged id costs nothing here and the counts stay within the sessions held.
 */
export class MemoryResumeRate extends ResumeRate {
  private readonly counter = new ResumeWindowCounter();

  constructor(private readonly registry: ConnectionRegistry) {
    super();
  }

  admit(connectionId: string): number {
    if (this.registry.get(connectionId)?.isResumable !== true) return 0;
    return this.counter.hit(connectionId, Date.now());
  }
}
