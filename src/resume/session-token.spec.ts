import { newConnectionId } from '../protocol/connection-id';
import { connectionIdOfToken, newSessionToken, tokenDigest } from './session-token';

describe('session tokens', () => {
  const connectionId = newConnectionId('node_A1');

  it('carry the connection id after 192 random bits, in base64url only', () => {
    const token = newSessionToken(connectionId);
    expect(token).toMatch(/^[A-Za-z0-9_-]{32}node_A1-[A-Za-z0-9_-]{22}$/);
    expect(connectionIdOfToken(token)).toBe(connectionId);
  });

  it('are never the same twice for one session, nor share a digest', () => {
    const tokens = Array.from({ length: 100 }, () => newSessionToken(connectionId));
    expect(new Set(tokens).size).toBe(100);
    expect(new Set(tokens.map(tokenDigest)).size).toBe(100);
  });

  it.each([
    ['a token without a connection id', 'A'.repeat(32)],
    ['a shorter token', 'A'.repeat(20)],
    ['a connection id with a bad node part', 'A'.repeat(32) + 'no-' + 'B'.repeat(22)],
    ['a connection id too short', 'A'.repeat(32) + 'node_A1-' + 'B'.repeat(21)],
    ['a connection id too long', 'A'.repeat(32) + 'node_A1-' + 'B'.repeat(23)],
  ])('name no connection id for %s', (_, token) => {
    expect(connectionIdOfToken(token)).toBeNull();
  });
});
