import { encodeMessageFrame } from './message-frame';

describe(encodeMessageFrame.name, () => {
  const head = '["message",{"topic":"a.b"},';
  const payload = Buffer.from('{"n":"ü"}');

  it.each([false, true])('is head, payload and "]" (kept: %s)', (isKept) => {
    expect(encodeMessageFrame(head, payload, isKept).toString()).toBe('["message",{"topic":"a.b"},{"n":"ü"}]');
  });

  it('a kept frame owns its memory: no slice of the shared pool', () => {
    const kept = encodeMessageFrame(head, Buffer.alloc(1024, 0x31), true);
    expect(kept.byteOffset).toBe(0);
    expect(kept.buffer.byteLength).toBe(kept.length);
  });

  it('a frame sent and dropped may come from the shared pool (small ones do)', () => {
    const sent = encodeMessageFrame(head, payload);
    expect(sent.buffer.byteLength).toBeGreaterThan(sent.length);
  });
});
