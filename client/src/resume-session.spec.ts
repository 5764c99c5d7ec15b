import type { HelloMeta } from './frames';
import { ResumeSession } from './resume-session';

const LATTICE = ['v1.gateway-lattice+json'];
const hello = (token: string, windowSeconds = 30, resumed = false): HelloMeta => ({
  resume: { token, windowSeconds },
  resumed,
  lost: [],
  replayed: null,
});

function offerOf(protocols: string[]): unknown {
  const last = protocols[protocols.length - 1];
  return last.startsWith('gateway-resume.')
    ? JSON.parse(Buffer.from(last.slice('gateway-resume.'.length), 'base64url').toString('utf8'))
    : last;
}

describe(ResumeSession.name, () => {
  it('disabled: the lattice protocols alone, always', () => {
    const session = new ResumeSession(false);
    session.greeted(hello('T'));
    session.lost(0);
    expect(session.protocolsAt(1, LATTICE)).toEqual(LATTICE);
  });

  it('opts in first; after a loss within the window offers the latest token and the positions received', () => {
    const session = new ResumeSession(true);
    expect(session.protocolsAt(0, LATTICE)).toEqual([...LATTICE, 'gateway-resume']);
    session.greeted(hello('T1', 30));
    expect(session.received('a', { offset: 1, epoch: 'E' })).toBe(true);
    expect(session.received('legacy', null)).toBe(true);
    session.lost(1000);
    session.lost(20_000); // a failed attempt: the window still runs from the first loss
    expect(offerOf(session.protocolsAt(30_999, LATTICE))).toEqual({
      token: 'T1',
      count_replayed: true,
      positions: { a: [1, 'E'] },
    });
    expect(session.protocolsAt(31_000, LATTICE)).toEqual([...LATTICE, 'gateway-resume']);
    expect(session.protocolsAt(0, LATTICE)).toEqual([...LATTICE, 'gateway-resume']); // the expired token is gone
  });

  it('a resumed hello keeps the positions and brings a new token; a new session clears them', () => {
    const session = new ResumeSession(true);
    session.greeted(hello('T1'));
    session.received('a', { offset: 4, epoch: 'E' });
    session.lost(0);
    expect(session.greeted(hello('T2', 30, true))).toBe(true);
    expect(session.received('a', { offset: 4, epoch: 'E' })).toBe(false); // replayed, already delivered
    session.lost(0);
    expect(offerOf(session.protocolsAt(1, LATTICE))).toEqual({
      token: 'T2',
      count_replayed: true,
      positions: { a: [4, 'E'] },
    });
    expect(session.greeted(hello('T3'))).toBe(false);
    expect(session.received('a', { offset: 4, epoch: 'E' })).toBe(true);
  });

  it('a hello without a session (RESUME_WINDOW=0) or an ended session leaves nothing to resume', () => {
    const session = new ResumeSession(true);
    session.greeted({ resume: null, resumed: false, lost: [], replayed: null });
    session.lost(0);
    expect(session.protocolsAt(1, LATTICE)).toEqual([...LATTICE, 'gateway-resume']);
    session.greeted(hello('T'));
    session.end();
    session.lost(0);
    expect(session.protocolsAt(1, LATTICE)).toEqual([...LATTICE, 'gateway-resume']);
  });
});
