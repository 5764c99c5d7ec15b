import { Logger } from '@nestjs/common';
import { OutageCauses } from './outage-causes';

describe(OutageCauses.name, () => {
  let isUp: boolean;
  let isClosing: boolean;
  let warned: Array<Record<string, unknown>>;
  let sut: OutageCauses;

  const refused = (): Error =>
    Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6390'), { code: 'ECONNREFUSED' });
  const said = (msg: string): Array<Record<string, unknown>> => warned.filter((line) => line.msg === msg);

  beforeEach(() => {
    isUp = false;
    isClosing = false;
    warned = [];
    jest.spyOn(Logger.prototype, 'warn').mockImplementation((line: unknown) => void warned.push(line as never));
    jest.spyOn(Logger.prototype, 'debug').mockImplementation(() => undefined);
    sut = new OutageCauses('redis://127.0.0.1:6390', { isUp: () => isUp, isClosing: () => isClosing });
  });

  afterEach(() => jest.restoreAllMocks());

  it('has no cause before the first error, then the last one', () => {
    expect(sut.lastCause).toBeNull();
    sut.error('command', new Error('first'));
    sut.error('subscriber', refused());
    expect(sut.lastCause).toBe('connect ECONNREFUSED 127.0.0.1:6390');
  });

  it('says why the link went down: the last cause, or that the connection closed', () => {
    sut.down('command');
    sut.error('command', new Error('Connection is closed.'));
    sut.down('subscriber');
    expect(said('redis down')).toEqual([
      { msg: 'redis down', role: 'command', redis: 'redis://127.0.0.1:6390', cause: 'connection closed' },
      { msg: 'redis down', role: 'subscriber', redis: 'redis://127.0.0.1:6390', cause: 'Connection is closed.' },
    ]);
  });

  it('says nothing of going down while the link closes', () => {
    isClosing = true;
    sut.down('command');
    expect(warned).toEqual([]);
  });

  it('while down, says each cause once per outage, and again after the link was up', () => {
    sut.error('command', refused());
    sut.error('subscriber', refused());
    sut.error('command', Object.assign(new Error('WRONGPASS invalid password'), { code: 'WRONGPASS' }));
    expect(said('redis unreachable')).toEqual([
      { msg: 'redis unreachable', role: 'command', redis: 'redis://127.0.0.1:6390', cause: refused().message },
      {
        msg: 'redis unreachable',
        role: 'command',
        redis: 'redis://127.0.0.1:6390',
        cause: 'WRONGPASS invalid password',
      },
    ]);
    sut.error('command', Object.assign(new Error('WRONGPASS invalid password'), { code: 'WRONGPASS' }));
    expect(said('redis unreachable')).toHaveLength(2);
    sut.up();
    sut.error('command', Object.assign(new Error('WRONGPASS invalid password'), { code: 'WRONGPASS' }));
    expect(said('redis unreachable')).toHaveLength(3);
  });

  it('a code missing from the message is put before it', () => {
    sut.error('command', Object.assign(new Error('Connection timeout'), { code: 'ETIMEDOUT' }));
    expect(sut.lastCause).toBe('ETIMEDOUT: Connection timeout');
    expect(said('redis unreachable')[0]).toMatchObject({ cause: 'ETIMEDOUT: Connection timeout' });
  });

  it('keeps the cause but does not warn while up, while closing, or for a failed round over the sentinels', () => {
    isUp = true;
    sut.error('command', new Error('up'));
    expect(sut.lastCause).toBe('up');
    isUp = false;
    isClosing = true;
    sut.error('command', new Error('closing'));
    expect(sut.lastCause).toBe('closing');
    isClosing = false;
    sut.error('command', new Error('All sentinels are unreachable. Retrying from scratch after 50ms.'));
    expect(sut.lastCause).toBe('All sentinels are unreachable. Retrying from scratch after 50ms.');
    expect(warned).toEqual([]);
  });
});
