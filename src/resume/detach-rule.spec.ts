import { isDetachedByClose } from './detach-rule';

describe(isDetachedByClose.name, () => {
  it.each<[string, { reason: string } | null, number, boolean]>([
    ['TCP lost (no close frame)', null, 1006, true],
    ['a client close without a code', null, 1005, true],
    ['a client close 4000', null, 4000, true],
    ['a client close 1011', null, 1011, true],
    ['the client goodbye 1000', null, 1000, false],
    ['the client goodbye 1001', null, 1001, false],
    ['our slow-consumer close', { reason: 'slow_consumer' }, 1008, true],
    ['our drain', { reason: 'service_restart' }, 1012, true],
    ['our protocol fault', { reason: 'validation_error' }, 1007, false],
    ['a backend disconnect', { reason: 'disconnected' }, 4403, false],
    ['our close the client answered with 1000', { reason: 'validation_error' }, 1000, false],
  ])('%s → detached: %p', (_, sent, peerCode, expected) => {
    expect(isDetachedByClose(sent, peerCode)).toBe(expected);
  });
});
