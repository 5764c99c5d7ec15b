import { BrokerCommand, MemoryBroker } from './broker';

describe(MemoryBroker.name, () => {
  it('applies a command with the handler of its kind, synchronously', async () => {
    const sut = new MemoryBroker();
    const seen: BrokerCommand[] = [];
    sut.handle('publish', (c) => seen.push(c));
    sut.handle('topic_subscribe', () => seen.push({ kind: 'users_unsubscribe', connectionId: 'wrong' }));
    const command: BrokerCommand = { kind: 'publish', topic: 't', frame: Buffer.from('x') };
    const done = sut.dispatch(command);
    expect(seen).toEqual([command]);
    await done;
  });

  it('throws on a kind nobody handles (a wiring bug)', () => {
    expect(() => new MemoryBroker().dispatch({ kind: 'users_unsubscribe', connectionId: 'c' })).toThrow('no handler');
  });
});
