import type { WebSocket } from 'ws';
import type { Handler } from '../config/gateway-config';
import { Connection, PositionedFrame } from './connection';

const HANDLER = { name: 'chat1', path: '/', messageHandlers: new Map() } as Handler;

/** A socket that records what was sent. */
function socket(): WebSocket & { sent: string[] } {
  const sent: string[] = [];
  return {
    sent,
    bufferedAmount: 0,
    readyState: 1,
    OPEN: 1,
    send: (frame: Buffer | string) => sent.push(frame.toString()),
    close: () => undefined,
  } as unknown as WebSocket & { sent: string[] };
}

const at = (topic: string, offset: number, epoch = 'E'): PositionedFrame => ({
  frame: Buffer.from(`${topic}:${offset}:${epoch}`),
  topic,
  offset,
  epoch,
});

describe('Connection, a resume replay (SPEC §12.3)', () => {
  it('holds live frames while the replay is read, then sends only those beyond it, and drops later ones it covered', () => {
    const ws = socket();
    const sut = new Connection('c', HANDLER, ws, 1024, () => undefined, true);
    sut.state = 'ready';
    sut.holdForReplay();
    expect(sut.state).toBe('pending');
    for (const frame of [at('t', 4), at('t', 5), at('u', 2), at('t', 6)]) sut.sendPositioned(frame);
    expect(ws.sent).toEqual([]);
    const held = sut.endReplayHold(new Map([['t', { offset: 5, epoch: 'E' }]]));
    expect(sut.state).toBe('ready');
    expect(held.map((frame) => frame.frame.toString())).toEqual(['u:2:E', 't:6:E']);
    sut.sendPositioned(at('t', 6));
    sut.sendPositioned(at('t', 7));
    sut.sendPositioned(at('t', 5)); // the check ended with the first frame beyond the replay
    expect(ws.sent).toEqual(['t:6:E', 't:7:E', 't:5:E']);
  });

  it('a frame of another epoch is never taken for a replayed one', () => {
    const ws = socket();
    const sut = new Connection('c', HANDLER, ws, 1024, () => undefined, true);
    sut.holdForReplay();
    expect(sut.endReplayHold(new Map([['t', { offset: 9, epoch: 'E' }]]))).toEqual([]);
    sut.sendPositioned(at('t', 1, 'F'));
    expect(ws.sent).toEqual(['t:1:F']);
  });

  it('held frames count against the slow-consumer limit', () => {
    const slow: Connection[] = [];
    const sut = new Connection('c', HANDLER, socket(), 8, (connection) => slow.push(connection), true);
    sut.holdForReplay();
    sut.sendPositioned(at('t', 1));
    expect(slow).toEqual([]);
    sut.sendPositioned(at('t', 2));
    expect(slow).toEqual([sut]);
    expect(sut.state).toBe('closed');
  });
});
