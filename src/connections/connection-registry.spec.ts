import * as fc from 'fast-check';
import type { WebSocket } from 'ws';
import type { GatewayConfig, Handler } from '../config/gateway-config';
import { GatewayMetrics } from '../metrics/gateway-metrics';
import { Connection } from './connection';
import { ConnectionRegistry } from './connection-registry';

const CONFIG = { nodeId: 'node', limits: { clientQueueMaxBytes: 1024 } } as unknown as GatewayConfig;
const HANDLER = { name: 'chat1', path: '/', messageHandlers: new Map() } as Handler;
const SOCKET = {} as WebSocket;

function registry(): ConnectionRegistry {
  return new ConnectionRegistry(CONFIG, new GatewayMetrics());
}

/** Open a connection and bind it to `userId` the way hello does. */
function openAs(sut: ConnectionRegistry, userId: string): Connection {
  const connection = sut.open(SOCKET, HANDLER);
  connection.identity = { userId, json: '{}', authorization: '' } as Connection['identity'];
  sut.bindUser(connection, userId);
  return connection;
}

describe(ConnectionRegistry.name, () => {
  it('finds a user with one connection, then with two, then with one again', () => {
    const sut = registry();
    const a = openAs(sut, 'u');
    expect([...sut.ofUser('u')]).toEqual([a]);
    const b = openAs(sut, 'u');
    expect([...sut.ofUser('u')]).toEqual([a, b]);
    sut.remove(a);
    expect([...sut.ofUser('u')]).toEqual([b]);
    expect(sut.hasUser('u')).toBe(true);
    sut.remove(b);
    expect([...sut.ofUser('u')]).toEqual([]);
    expect(sut.hasUser('u')).toBe(false);
  });

  it('binds the same connection twice as once', () => {
    const sut = registry();
    const a = openAs(sut, 'u');
    sut.bindUser(a, 'u');
    expect([...sut.ofUser('u')]).toEqual([a]);
    sut.remove(a);
    expect(sut.hasUser('u')).toBe(false);
  });

  it('agrees with a plain map of sets over any sequence of opens and removes', () => {
    const step = fc.oneof(fc.record({ open: fc.constantFrom('u1', 'u2', 'u3') }), fc.record({ remove: fc.nat(20) }));
    fc.assert(
      fc.property(fc.array(step, { maxLength: 60 }), (steps) => {
        const sut = registry();
        const model = new Map<string, Set<Connection>>();
        const open: Connection[] = [];
        for (const s of steps) {
          if ('open' in s) {
            const connection = openAs(sut, s.open);
            open.push(connection);
            if (!model.has(s.open)) model.set(s.open, new Set());
            model.get(s.open)!.add(connection);
          } else if (open.length > 0) {
            const [connection] = open.splice(s.remove % open.length, 1);
            sut.remove(connection);
            model.get(connection.userId!)!.delete(connection);
          }
        }
        for (const user of ['u1', 'u2', 'u3']) {
          const expected = [...(model.get(user) ?? [])];
          expect(new Set(sut.ofUser(user))).toEqual(new Set(expected));
          expect(sut.hasUser(user)).toBe(expected.length > 0);
        }
        expect(sut.size).toBe(open.length);
      }),
    );
  });
});
